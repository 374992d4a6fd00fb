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

/// A setting as the study found it, to put back afterwards.
#[derive(Clone, Debug)]
pub struct Saved {
    /// The setting's name.
    pub name: String,
    /// Its value before the study.
    pub value: String,
    /// How to put it back: PostgreSQL `ALTER SYSTEM RESET` (it came from postgresql.conf or
    /// the default) rather than `ALTER SYSTEM SET` to the value.
    reset: bool,
}

/// True for a setting name oio will put in SQL: letters, digits, `_` and `.` only.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// A value as an SQL literal: bare when it is a word or number (MariaDB refuses quoted
/// numbers for numeric variables), else quoted with quotes doubled.
fn literal(value: &str) -> String {
    let bare = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.+-".contains(c));
    if bare {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\'', "''"))
    }
}

fn open(url: &DbUrl, timeouts: &Timeouts) -> anyhow::Result<Session> {
    let shared = Arc::new(oio_tpcc::db::SqliteShared::default());
    Ok(Session::open(
        url,
        "oio-tpcc-study",
        oio_tpcc::SqliteSync::Full,
        &shared,
        timeouts,
    )?)
}

fn one_text(s: &mut Session, sql: &str) -> anyhow::Result<Option<String>> {
    let (_, rows) = s.query_sql(sql).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(rows.first().and_then(|r| r.first()).map(val_text))
}

/// Refuses a PostgreSQL setting that ALTER SYSTEM and a reload cannot change for a run:
/// `postmaster` (read at server start) or `internal` (fixed when the cluster was made).
fn refuse_fixed(name: &str, context: &str) -> anyhow::Result<()> {
    match context {
        "postmaster" => anyhow::bail!("--set {name}=…: PostgreSQL applies '{name}' only when the server restarts (pg_settings.context = postmaster), so ALTER SYSTEM and a reload cannot change it for a run; oio did not start this server and cannot restart it, so the study is refused before any run. Change it yourself, restart the server between two `oio tpcc run --label …` and compare them"),
        "internal" => anyhow::bail!("--set {name}=…: PostgreSQL's '{name}' cannot be changed on this server at all (pg_settings.context = internal: fixed when it was built or the cluster was created), not even by a restart"),
        _ => Ok(()),
    }
}

/// Checks that each of `names` can be changed on the running server without a restart and
/// reads its current value. SQLite: only `synchronous` (oio's connections set it).
pub fn save(url: &DbUrl, names: &[String], timeouts: &Timeouts) -> anyhow::Result<Vec<Saved>> {
    for n in names {
        if !valid_name(n) {
            anyhow::bail!("--set: '{n}' is not a setting name (expected letters, digits, _ and .)");
        }
    }
    if let DbUrl::Sqlite(_) = url {
        if let Some(n) = names.iter().find(|n| n.as_str() != "synchronous") {
            anyhow::bail!("--set {n}=…: on SQLite a study can set only synchronous (full, normal or off), the pragma oio's connections set; other pragmas are not oio's to change");
        }
        return Ok(Vec::new());
    }
    let mut s = open(url, timeouts)?;
    let mut out = Vec::new();
    for n in names {
        let saved = match url.dialect() {
            oio_tpcc::url::Dialect::Postgres => {
                let (_, rows) = s
                    .query_sql(&format!(
                        "SELECT context, current_setting(name), coalesce(sourcefile, ''), source FROM pg_settings WHERE name = '{n}'"
                    ))
                    .map_err(|e| anyhow::anyhow!("reading pg_settings: {e}"))?;
                let Some(r) = rows.first() else {
                    anyhow::bail!("--set {n}=…: PostgreSQL has no setting '{n}' (see pg_settings)");
                };
                let context = val_text(&r[0]);
                refuse_fixed(n, &context)?;
                let file = val_text(&r[2]);
                let source = val_text(&r[3]);
                Saved {
                    name: n.clone(),
                    value: val_text(&r[1]),
                    reset: if file.is_empty() {
                        source == "default"
                    } else {
                        !file.ends_with("postgresql.auto.conf")
                    },
                }
            }
            oio_tpcc::url::Dialect::Mysql => {
                let value = one_text(&mut s, &format!("SELECT @@GLOBAL.{n}")).map_err(|e| {
                    anyhow::anyhow!("--set {n}=…: not a global variable of this server ({e})")
                })?;
                // MariaDB says which variables are read-only at run time (MySQL does not:
                // there SET GLOBAL refuses them before the candidate's first run).
                let read_only = one_text(
                    &mut s,
                    &format!("SELECT READ_ONLY FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME = '{}'", n.to_uppercase()),
                );
                if let Ok(Some(ro)) = read_only {
                    if ro.eq_ignore_ascii_case("yes") {
                        anyhow::bail!("--set {n}=…: '{n}' is read-only while the server runs (information_schema.SYSTEM_VARIABLES.READ_ONLY = YES): it takes a server restart with the new value in its configuration, and oio did not start this server and cannot restart it, so the study is refused before any run. Change it yourself, restart the server between two `oio tpcc run --label …` and compare them");
                    }
                }
                Saved {
                    name: n.clone(),
                    value: value.unwrap_or_default(),
                    reset: false,
                }
            }
            oio_tpcc::url::Dialect::Sqlite => unreachable!("handled above"),
        };
        out.push(saved);
    }
    Ok(out)
}

/// Applies `settings` server-wide (PostgreSQL: ALTER SYSTEM and a reload, waiting up to 5 s
/// until a new session sees each value; MariaDB/MySQL: SET GLOBAL). Returns warnings for
/// values a new session does not show as given.
pub fn apply(
    url: &DbUrl,
    settings: &[(String, String)],
    timeouts: &Timeouts,
) -> anyhow::Result<Vec<String>> {
    if let DbUrl::Sqlite(_) = url {
        return Ok(Vec::new());
    }
    let mut s = open(url, timeouts)?;
    for (n, v) in settings {
        let sql = match url.dialect() {
            oio_tpcc::url::Dialect::Postgres => format!("ALTER SYSTEM SET {n} = {}", literal(v)),
            _ => format!("SET GLOBAL {n} = {}", literal(v)),
        };
        s.batch(&sql).map_err(|e| {
            anyhow::anyhow!(
                "{sql}: {e} (a study needs a superuser, or SUPER / SYSTEM_VARIABLES_ADMIN)"
            )
        })?;
    }
    reload_and_wait(url, &mut s, settings, timeouts)
}

fn reload_and_wait(
    url: &DbUrl,
    s: &mut Session,
    settings: &[(String, String)],
    timeouts: &Timeouts,
) -> anyhow::Result<Vec<String>> {
    let pg = url.dialect() == oio_tpcc::url::Dialect::Postgres;
    if pg {
        s.batch("SELECT pg_reload_conf()")
            .map_err(|e| anyhow::anyhow!("pg_reload_conf(): {e}"))?;
    }
    // The postmaster applies a reload asynchronously: a new session shows when it has.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let mut fresh = open(url, timeouts)?;
        let mut off = Vec::new();
        for (n, v) in settings {
            let sql = if pg {
                format!("SELECT current_setting('{n}')")
            } else {
                format!("SELECT @@GLOBAL.{n}")
            };
            let now = one_text(&mut fresh, &sql)?.unwrap_or_default();
            if !now.eq_ignore_ascii_case(v) {
                off.push(format!(
                    "{n}: asked {v}, a new session shows {now} (the server's own spelling, or not applied)"
                ));
            }
        }
        if off.is_empty() || std::time::Instant::now() >= deadline {
            return Ok(off);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The statement that puts one saved setting back (PostgreSQL: ALTER SYSTEM RESET or SET,
/// which takes effect at the next reload).
fn restore_sql(url: &DbUrl, x: &Saved) -> String {
    let pg = url.dialect() == oio_tpcc::url::Dialect::Postgres;
    match (pg, x.reset) {
        (true, true) => format!("ALTER SYSTEM RESET {}", x.name),
        (true, false) => format!("ALTER SYSTEM SET {} = {}", x.name, literal(&x.value)),
        (false, _) => format!("SET GLOBAL {} = {}", x.name, literal(&x.value)),
    }
}

/// The SQL a user runs to put `saved` back by hand: each statement, then PostgreSQL's reload.
pub fn restore_script(url: &DbUrl, saved: &[&Saved]) -> Vec<String> {
    let mut out: Vec<String> = saved.iter().map(|x| restore_sql(url, x)).collect();
    if url.dialect() == oio_tpcc::url::Dialect::Postgres && !out.is_empty() {
        out.push("SELECT pg_reload_conf()".into());
    }
    out
}

/// Puts the saved settings back (PostgreSQL: ALTER SYSTEM RESET or SET, and a reload).
pub fn restore(url: &DbUrl, saved: &[Saved], timeouts: &Timeouts) -> anyhow::Result<()> {
    if saved.is_empty() {
        return Ok(());
    }
    let mut s = open(url, timeouts)?;
    for x in saved {
        let sql = restore_sql(url, x);
        s.batch(&sql).map_err(|e| anyhow::anyhow!("{sql}: {e}"))?;
    }
    let back: Vec<(String, String)> = saved
        .iter()
        .map(|x| (x.name.clone(), x.value.clone()))
        .collect();
    let off = reload_and_wait(url, &mut s, &back, timeouts)?;
    if !off.is_empty() {
        anyhow::bail!("settings not back as they were: {}", off.join("; "));
    }
    Ok(())
}
