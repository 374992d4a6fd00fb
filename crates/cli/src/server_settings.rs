//! Reading the database server's non-default settings, its version and the storage under its
//! data directory, for each TPC-C result (`TpccResult::settings`).
//!
//! Why here: the queries go through `oio_tpcc`'s public session API; the storage facts come
//! from `oio_engine`'s /sys and mountinfo readers, which the driver crate does not depend on.

use oio_core::settings::{ServerSettings, Storage};
use oio_tpcc::db::Session;
use oio_tpcc::{DbUrl, Timeouts};
use std::collections::BTreeMap;
use std::sync::Arc;

/// PostgreSQL: every setting not at its built-in default, except those oio's own session set
/// (`client`, `session`) and the ones the server derives itself (`override`: data directory,
/// segment size, …), shown as `current_setting` shows them (with units).
const PG_QUERY: &str = "SELECT name, current_setting(name) FROM pg_settings WHERE source NOT IN ('default', 'client', 'session', 'override') ORDER BY name";
/// MariaDB: global variables whose value did not come from the compiled-in default (nor was
/// set automatically from the host, `AUTO`).
const MARIADB_QUERY: &str = "SELECT VARIABLE_NAME, GLOBAL_VALUE FROM information_schema.SYSTEM_VARIABLES WHERE GLOBAL_VALUE_ORIGIN NOT IN ('COMPILE-TIME', 'AUTO') ORDER BY VARIABLE_NAME";
/// MySQL 8: the same from performance_schema.
const MYSQL_QUERY: &str = "SELECT v.VARIABLE_NAME, g.VARIABLE_VALUE FROM performance_schema.variables_info v JOIN performance_schema.global_variables g ON g.VARIABLE_NAME = v.VARIABLE_NAME WHERE v.VARIABLE_SOURCE NOT IN ('COMPILED') ORDER BY v.VARIABLE_NAME";
/// SQLite: the pragmas that decide durability and caching, as oio's connections set them.
const SQLITE_PRAGMAS: [&str; 8] = [
    "journal_mode",
    "synchronous",
    "page_size",
    "cache_size",
    "temp_store",
    "locking_mode",
    "wal_autocheckpoint",
    "mmap_size",
];

/// The settings of the server behind `url`, as the driver's sessions see them (SQLite with
/// `sync`). Errors become notes: a result is never lost because its settings could not be
/// read.
pub fn capture(url: &DbUrl, sync: oio_tpcc::SqliteSync, timeouts: &Timeouts) -> ServerSettings {
    let mut s = ServerSettings {
        engine: url.dialect().name().to_string(),
        ..Default::default()
    };
    let shared = Arc::new(oio_tpcc::db::SqliteShared::default());
    match Session::open(url, "oio-tpcc-settings", sync, &shared, timeouts) {
        Ok(mut session) => read_values(&mut session, &mut s),
        Err(e) => s.notes.push(format!("settings not read: {e}")),
    }
    s.storage = storage(url, timeouts, &mut s.notes);
    s
}

fn read_values(session: &mut Session, s: &mut ServerSettings) {
    let pairs = |session: &mut Session, sql: &str| {
        session.query_sql(sql).map(|(_, rows)| {
            rows.iter()
                .filter_map(|r| Some((val_text(r.first()?), val_text(r.get(1)?))))
                .collect::<BTreeMap<String, String>>()
        })
    };
    let text = |session: &mut Session, sql: &str| {
        session
            .query_sql(sql)
            .ok()
            .and_then(|(_, rows)| rows.first()?.first().map(val_text))
            .unwrap_or_default()
    };
    match session.dialect() {
        oio_tpcc::url::Dialect::Postgres => {
            s.version = text(session, "SHOW server_version");
            s.source = format!("pg_settings: {PG_QUERY}");
            match pairs(session, PG_QUERY) {
                Ok(v) => s.values = v,
                Err(e) => s.notes.push(format!("pg_settings not read: {e}")),
            }
        }
        oio_tpcc::url::Dialect::Mysql => {
            s.version = text(session, "SELECT VERSION()");
            match pairs(session, MARIADB_QUERY) {
                Ok(v) => {
                    s.source = format!("MariaDB: {MARIADB_QUERY}");
                    s.values = lower_keys(v);
                }
                Err(_) => match pairs(session, MYSQL_QUERY) {
                    Ok(v) => {
                        s.source = format!("MySQL: {MYSQL_QUERY}");
                        s.values = lower_keys(v);
                    }
                    Err(e) => s.notes.push(format!(
                        "global variables not read (neither information_schema.SYSTEM_VARIABLES nor performance_schema.variables_info): {e}"
                    )),
                },
            }
        }
        oio_tpcc::url::Dialect::Sqlite => {
            s.version = text(session, "SELECT sqlite_version()");
            s.source = "PRAGMA values of oio's connections".to_string();
            for p in SQLITE_PRAGMAS {
                // The pragma's own name is the one column; journal_mode answers in lower case.
                let v = text(session, &format!("PRAGMA {p}"));
                if !v.is_empty() {
                    s.values.insert(p.to_string(), v);
                }
            }
        }
    }
}

/// A value as text: numbers as digits, NULL as empty.
fn val_text(v: &oio_tpcc::sql::Val) -> String {
    match v {
        oio_tpcc::sql::Val::Null => String::new(),
        oio_tpcc::sql::Val::Int(i) => i.to_string(),
        oio_tpcc::sql::Val::Float(f) => f.to_string(),
        oio_tpcc::sql::Val::Text(t) => t.clone(),
    }
}

fn lower_keys(v: BTreeMap<String, String>) -> BTreeMap<String, String> {
    v.into_iter().map(|(k, v)| (k.to_lowercase(), v)).collect()
}

/// The filesystem and device under the data directory, when it is on this machine.
fn storage(url: &DbUrl, timeouts: &Timeouts, notes: &mut Vec<String>) -> Option<Storage> {
    let dir = match oio_tpcc::db::data_location(url, timeouts) {
        Ok(Some(d)) => d,
        Ok(None) => return None,
        Err(e) => {
            notes.push(format!("data directory not found: {e}"));
            return None;
        }
    };
    let fs = oio_engine::target::facts::filesystem_of(&dir);
    let device = fs
        .as_ref()
        .and_then(|(_, dev)| oio_engine::target::facts::device_info(*dev));
    Some(Storage {
        data_dir: dir.display().to_string(),
        filesystem: fs.map(|(f, _)| f),
        device,
    })
}
