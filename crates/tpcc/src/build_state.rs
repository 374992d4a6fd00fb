//! The build record: one row in `oio_tpcc_build` saying whether the build of this database
//! finished.
//!
//! `build` creates the table and its row (state `building`) in the same transaction as the nine
//! tables, so a database with TPC-C tables always has a record of how far its build got. The
//! last step (ANALYZE, the server-side functions) and the switch to `complete` commit together,
//! so `complete` means every row, key and index is in place. A build that is stopped writes
//! `interrupted` or `failed` when it still can; one that is killed stays `building`, and then
//! whether its process is still alive tells "in progress" from "did not finish".
//!
//! `run` and `check` refuse anything but `complete`. A database without the table (built by
//! another tool or an older oio) is accepted with a warning: its completeness is unknown.

use crate::database::SqlOf;
use crate::db::Session;
use crate::error::{Result, TpccError};
use crate::url::DbUrl;

/// The table holding the record.
pub const TABLE: &str = "oio_tpcc_build";

/// Version of the table layout `build` creates (bumped when the schema changes).
pub const LAYOUT_VERSION: u32 = 1;

/// Application name of the build's sessions on PostgreSQL.
pub const BUILD_APPLICATION: &str = "oio-tpcc-build";

pub use oio_documents::tpcc::check::BuildRecord;

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// DDL and the first row, to run in the transaction that creates the tables.
pub(crate) fn create_sql(warehouses: u32, seed: u64, started_at: &str) -> String {
    format!(
        "CREATE TABLE {TABLE} (state VARCHAR(16) NOT NULL, phase VARCHAR(16) NOT NULL, \
         warehouses INTEGER NOT NULL, seed VARCHAR(20) NOT NULL, oio_version VARCHAR(32) NOT NULL, \
         layout_version INTEGER NOT NULL, started_at VARCHAR(40) NOT NULL, finished_at VARCHAR(40), \
         host VARCHAR(255) NOT NULL, pid INTEGER NOT NULL, error TEXT);\n\
         INSERT INTO {TABLE} VALUES ('building', 'loading', {warehouses}, '{seed}', {}, {LAYOUT_VERSION}, {}, NULL, {}, {}, NULL);\n",
        quote(env!("CARGO_PKG_VERSION")),
        quote(started_at),
        quote(&this_host()),
        std::process::id(),
    )
}

/// Statement recording the phase reached.
pub(crate) fn phase_sql(phase: &str) -> String {
    format!("UPDATE {TABLE} SET phase = {}", quote(phase))
}

/// Statement marking the build complete (run in the last step's transaction).
pub(crate) fn complete_sql() -> String {
    format!(
        "UPDATE {TABLE} SET state = 'complete', phase = 'complete', finished_at = {}",
        quote(&oio_core::host::now_rfc3339())
    )
}

/// Statement marking the build stopped: `interrupted` (Ctrl-C) or `failed`.
pub(crate) fn stopped_sql(state: &str, error: &str) -> String {
    let error: String = error.chars().take(2000).collect();
    format!(
        "UPDATE {TABLE} SET state = {}, finished_at = {}, error = {}",
        quote(state),
        quote(&oio_core::host::now_rfc3339()),
        quote(&error)
    )
}

fn this_host() -> String {
    oio_core::host::HostInfo::detect().hostname
}

/// The record, or None when the database has none.
pub fn read(s: &mut Session) -> Result<Option<BuildRecord>> {
    let exists = s.dialect().sql().table_exists_sql(TABLE);
    if s.query_int(&exists)? == 0 {
        return Ok(None);
    }
    let (_, rows) = s.query_sql(&format!(
        "SELECT state, phase, warehouses, seed, oio_version, layout_version, started_at, finished_at, host, pid, error FROM {TABLE}"
    ))?;
    let Some(r) = rows.first() else {
        // The table without its row: only a hand-edited database looks like this.
        return Ok(Some(BuildRecord {
            state: "unknown".into(),
            phase: "unknown".into(),
            warehouses: 0,
            seed: String::new(),
            oio_version: String::new(),
            layout_version: 0,
            started_at: "an unknown time".into(),
            finished_at: None,
            host: String::new(),
            pid: 0,
            error: None,
        }));
    };
    let opt = |v: &crate::db::Val| (!v.is_null()).then(|| v.text().to_string());
    Ok(Some(BuildRecord {
        state: r[0].text().to_string(),
        phase: r[1].text().to_string(),
        warehouses: r[2].int().clamp(0, u32::MAX as i64) as u32,
        seed: r[3].text().to_string(),
        oio_version: r[4].text().to_string(),
        layout_version: r[5].int().clamp(0, u32::MAX as i64) as u32,
        started_at: r[6].text().to_string(),
        finished_at: opt(&r[7]),
        host: r[8].text().to_string(),
        pid: r[9].int().clamp(0, u32::MAX as i64) as u32,
        error: opt(&r[10]),
    }))
}

/// True when the process that wrote a `building` record may still be building: on
/// PostgreSQL, another session of a build is connected to the database; anywhere, the
/// recorded process is alive on this host.
pub(crate) fn builder_alive(s: &mut Session, rec: &BuildRecord) -> bool {
    if let Some(sql) = s.dialect().sql().other_builders_sql(BUILD_APPLICATION) {
        if s.query_int(&sql).unwrap_or(0) > 0 {
            return true;
        }
    }
    rec.pid > 0
        && rec.host == this_host()
        && std::path::Path::new(&format!("/proc/{}", rec.pid)).exists()
}

/// Why a database with this record must not be used, or None when its build is complete.
pub(crate) fn refusal(url: &DbUrl, s: &mut Session, rec: &BuildRecord) -> Option<String> {
    if rec.is_complete() {
        return None;
    }
    let rebuild = format!(
        "rebuild with `oio tpcc build --db {url} --warehouses {} --force`",
        rec.warehouses.max(1)
    );
    let by = if rec.pid > 0 {
        format!(" by process {} on {}", rec.pid, rec.host)
    } else {
        String::new()
    };
    Some(match rec.state.as_str() {
        "building" if builder_alive(s, rec) => format!(
            "tpcc build of {url} is still in progress ({} phase, started {}{by}): wait for it to finish, or stop it and {rebuild}",
            rec.phase, rec.started_at
        ),
        "building" => format!(
            "tpcc build of {url} did not finish (it stopped in the {} phase, started {}{by}: killed, or the machine went down?): {rebuild}",
            rec.phase, rec.started_at
        ),
        "interrupted" => format!(
            "tpcc build of {url} did not finish (interrupted in the {} phase at {}): {rebuild}",
            rec.phase,
            rec.finished_at.as_deref().unwrap_or("an unknown time")
        ),
        "failed" => format!(
            "tpcc build of {url} did not finish (failed in the {} phase: {}): {rebuild}",
            rec.phase,
            rec.error.as_deref().unwrap_or("no reason recorded")
        ),
        other => format!(
            "tpcc build of {url} did not finish (its build record in {TABLE} says '{other}'): {rebuild}"
        ),
    })
}

/// Refuses a database whose build is incomplete or still running. Ok(None) when the database
/// has no build record (another tool's, or an older oio's), Ok(Some) when it is complete.
pub fn require_complete(url: &DbUrl, s: &mut Session) -> Result<Option<BuildRecord>> {
    let Some(rec) = read(s)? else {
        return Ok(None);
    };
    match refusal(url, s, &rec) {
        Some(why) => Err(TpccError::BuildIncomplete(why)),
        None => Ok(Some(rec)),
    }
}

/// The table recording the setup file a study ran on this build (`oio tpcc study --schema`):
/// a schema variant is set up once, and a later study on the same build neither runs it again
/// nor runs another one over it. A rebuild drops it with the nine tables.
pub const SETUP_TABLE: &str = "oio_tpcc_setup";

/// The setup recorded on this build: (candidate label, SHA-256 of the setup text); None when
/// no setup ran on it.
pub fn read_setup(s: &mut Session) -> Result<Option<(String, String)>> {
    let exists = s.dialect().sql().table_exists_sql(SETUP_TABLE);
    if s.query_int(&exists)? == 0 {
        return Ok(None);
    }
    let (_, rows) = s.query_sql(&format!("SELECT label, sha256 FROM {SETUP_TABLE}"))?;
    Ok(rows
        .first()
        .map(|r| (r[0].text().to_string(), r[1].text().to_string())))
}

/// Records that candidate `label`'s setup (its text's SHA-256) ran on this build.
pub fn record_setup(s: &mut Session, label: &str, sha256: &str) -> Result<()> {
    s.batch(&format!(
        "CREATE TABLE {SETUP_TABLE} (label VARCHAR(200) NOT NULL, sha256 VARCHAR(64) NOT NULL, applied_at VARCHAR(40) NOT NULL);\nINSERT INTO {SETUP_TABLE} VALUES ({}, {}, {});",
        quote(label),
        quote(sha256),
        quote(&oio_core::host::now_rfc3339())
    ))?;
    Ok(())
}

/// The warning for a database without a build record.
pub const NO_RECORD_WARNING: &str = "this database has no oio build record (built by another tool or an older oio), so whether its build finished cannot be verified";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_escaped() {
        assert_eq!(quote("it's"), "'it''s'");
        assert!(stopped_sql("failed", "a 'b'").contains("'a ''b'''"));
    }
}
