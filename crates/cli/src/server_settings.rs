//! Reading the database server's non-default settings, its version and the storage under its
//! data directory, for each TPC-C result (`TpccResult::settings`).
//!
//! Why here: what each database says and how its settings change is its dialect's
//! (`oio_tpcc::database::Database`); the storage facts come from `oio_engine`'s /sys and
//! mountinfo readers, which the driver crate does not depend on; the study's order (save,
//! apply and wait, restore) is the CLI's.

use oio_core::settings::{ServerSettings, Storage};
use oio_tpcc::database::Database;
use oio_tpcc::db::Session;
use oio_tpcc::{DbUrl, Timeouts};
use std::sync::Arc;

/// The settings of the server behind `url`, as the driver's sessions see them (SQLite with
/// `sync`). Errors become notes: a result is never lost because its settings could not be
/// read.
pub fn capture(url: &DbUrl, sync: oio_tpcc::SqliteSync, timeouts: &Timeouts) -> ServerSettings {
    let mut s = ServerSettings {
        engine: url.dialect().name().to_string(),
        ..Default::default()
    };
    let shared = Arc::new(oio_tpcc::db::SqliteShared::default());
    let database = oio_tpcc::database::open_sharing(url, &shared);
    match database.connect("oio-tpcc-settings", sync, timeouts) {
        Ok(mut session) => database.read_settings(&mut session, &mut s),
        Err(e) => s.notes.push(format!("settings not read: {e}")),
    }
    s.storage = storage(url, timeouts, &mut s.notes);
    s
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

fn open(database: &dyn Database, timeouts: &Timeouts) -> anyhow::Result<Session> {
    Ok(database.connect("oio-tpcc-study", oio_tpcc::SqliteSync::Full, timeouts)?)
}

/// Checks that each of `names` can be changed on the running server without a restart and
/// reads its current value. SQLite: only `synchronous` (oio's connections set it).
pub fn save(url: &DbUrl, names: &[String], timeouts: &Timeouts) -> anyhow::Result<Vec<Saved>> {
    for n in names {
        if !valid_name(n) {
            anyhow::bail!("--set: '{n}' is not a setting name (expected letters, digits, _ and .)");
        }
    }
    let database = oio_tpcc::database::open(url);
    for n in names {
        database.check_study_setting(n)?;
    }
    if !database.server_wide_settings() {
        return Ok(Vec::new());
    }
    let mut s = open(&*database, timeouts)?;
    let mut out = Vec::new();
    for n in names {
        let found = database.study_setting(&mut s, n)?;
        out.push(Saved {
            name: n.clone(),
            value: found.value,
            reset: found.reset,
        });
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
    let database = oio_tpcc::database::open(url);
    if !database.server_wide_settings() {
        return Ok(Vec::new());
    }
    let mut s = open(&*database, timeouts)?;
    for (n, v) in settings {
        let sql = database.set_setting_sql(n, &literal(v));
        s.batch(&sql).map_err(|e| {
            anyhow::anyhow!(
                "{sql}: {e} (a study needs a superuser, or SUPER / SYSTEM_VARIABLES_ADMIN)"
            )
        })?;
    }
    reload_and_wait(&*database, &mut s, settings, timeouts)
}

fn reload_and_wait(
    database: &dyn Database,
    s: &mut Session,
    settings: &[(String, String)],
    timeouts: &Timeouts,
) -> anyhow::Result<Vec<String>> {
    if let Some(reload) = database.reload_settings_sql() {
        // "pg_reload_conf(): …", the call's own name.
        s.batch(reload)
            .map_err(|e| anyhow::anyhow!("{}: {e}", reload.trim_start_matches("SELECT ")))?;
    }
    // The postmaster applies a reload asynchronously: a new session shows when it has.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let mut fresh = open(database, timeouts)?;
        let mut off = Vec::new();
        for (n, v) in settings {
            let sql = database.setting_value_sql(n);
            let now = oio_tpcc::database::one_text(&mut fresh, &sql)
                .map_err(|e| anyhow::anyhow!("{e}"))?
                .unwrap_or_default();
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
fn restore_sql(database: &dyn Database, x: &Saved) -> String {
    database.restore_setting_sql(&x.name, &literal(&x.value), x.reset)
}

/// The SQL a user runs to put `saved` back by hand: each statement, then PostgreSQL's reload.
pub fn restore_script(url: &DbUrl, saved: &[&Saved]) -> Vec<String> {
    let database = oio_tpcc::database::open(url);
    let mut out: Vec<String> = saved.iter().map(|x| restore_sql(&*database, x)).collect();
    if let Some(reload) = database.reload_settings_sql().filter(|_| !out.is_empty()) {
        out.push(reload.to_string());
    }
    out
}

/// Puts the saved settings back (PostgreSQL: ALTER SYSTEM RESET or SET, and a reload).
pub fn restore(url: &DbUrl, saved: &[Saved], timeouts: &Timeouts) -> anyhow::Result<()> {
    if saved.is_empty() {
        return Ok(());
    }
    let database = oio_tpcc::database::open(url);
    let mut s = open(&*database, timeouts)?;
    for x in saved {
        let sql = restore_sql(&*database, x);
        s.batch(&sql).map_err(|e| anyhow::anyhow!("{sql}: {e}"))?;
    }
    let back: Vec<(String, String)> = saved
        .iter()
        .map(|x| (x.name.clone(), x.value.clone()))
        .collect();
    let off = reload_and_wait(&*database, &mut s, &back, timeouts)?;
    if !off.is_empty() {
        anyhow::bail!("settings not back as they were: {}", off.join("; "));
    }
    Ok(())
}
