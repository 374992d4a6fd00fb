//! Reading the database server's non-default settings, its version and the storage under its
//! data directory, for each TPC-C result (`TpccResult::settings`).
//!
//! Why here: what each database says and how its settings change is its dialect's
//! (`oio_tpcc::database::Database`); the storage facts come from `oio_engine`'s /sys and
//! mountinfo readers, which the driver crate does not depend on; the study's order (lock,
//! journal, apply and wait, restore) is the CLI's, the journal and the lock
//! `oio_tpcc::settings`.

use crate::output::style;
use oio_core::settings::{ServerSettings, Storage};
use oio_tpcc::database::Database;
use oio_tpcc::db::Session;
use oio_tpcc::restore::Locking;
use oio_tpcc::settings::{Change, Journal, Kind};
use oio_tpcc::{DbUrl, Timeouts};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The settings of the server behind `url`, as the driver's sessions see them (SQLite with
/// `sync`). Errors become notes: a result is never lost because its settings could not be
/// read.
pub fn capture(url: &DbUrl, sync: oio_tpcc::SqliteSync, timeouts: &Timeouts) -> ServerSettings {
    let mut s = ServerSettings {
        engine: url.dialect().name().to_string(),
        ..Default::default()
    };
    let shared = Arc::new(oio_tpcc::db::WriterGate::default());
    let database = oio_tpcc::dialects::open_sharing(url, &shared);
    match database.connect("oio-tpcc-settings", sync, timeouts) {
        Ok(mut session) => database.read_settings(&mut session, &mut s),
        Err(e) => s.notes.push(format!("settings not read: {e}")),
    }
    s.storage = storage(url, timeouts, &mut s.notes);
    s
}

/// The filesystem and device under the data directory, when it is on this machine.
fn storage(url: &DbUrl, timeouts: &Timeouts, notes: &mut Vec<String>) -> Option<Storage> {
    let dir = match oio_tpcc::dialects::data_location(url, timeouts) {
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
    /// Its value before the study, as sessions saw it.
    pub value: String,
    /// Where the study changes it and what puts it back (journaled).
    pub change: Change,
}

/// A study's hold on the server: its lock (held by a session of its own until this is
/// dropped), the settings as they were, and the journal entry that puts them back if the
/// study dies before it can.
pub struct StudyHold {
    database: Arc<dyn Database>,
    _lock: oio_tpcc::restore::Lock,
    journal: Journal,
    entry: PathBuf,
    /// The settings as they were (empty for SQLite, whose pragma is per connection).
    pub saved: Vec<Saved>,
}

fn open(database: &dyn Database, timeouts: &Timeouts) -> anyhow::Result<Session> {
    Ok(database.connect("oio-tpcc-study", oio_tpcc::SqliteSync::Full, timeouts)?)
}

/// Prints what [`oio_tpcc::restore::recover`] put back or left to a live owner.
fn announce(r: &oio_tpcc::restore::Recovered) {
    for line in &r.restored {
        style::print_notice(line);
    }
    for holder in &r.busy {
        style::print_warning(&format!(
            "settings on this server are changed now by {holder}; results measured meanwhile measure under them"
        ));
    }
}

/// Before any `oio tpcc` command on a server: puts back what an earlier oio process left
/// changed there (killed before it could), printing what it restored; refuses, with the SQL
/// to run by hand, when it cannot. A server oio cannot reach is left to the command to report.
pub fn recover(url: &DbUrl, timeouts: &Timeouts) -> anyhow::Result<()> {
    let database = oio_tpcc::dialects::open(url);
    if !database.server_wide_settings() {
        return Ok(());
    }
    let Ok(mut s) = open(&*database, timeouts) else {
        return Ok(());
    };
    match oio_tpcc::restore::recover(&*database, &mut s, timeouts, None) {
        Ok((r, _)) => {
            announce(&r);
            Ok(())
        }
        Err(e @ oio_tpcc::TpccError::SettingsLeft { .. }) => Err(e.into()),
        Err(e) => {
            style::print_warning(&format!(
                "oio's settings journal for this server was not checked: {e}"
            ));
            Ok(())
        }
    }
}

/// Starts a study's hold on the server: checks that each of `names` can be changed on the
/// running server without a restart, takes the study lock (refusing, naming the holder, when
/// another study has it), puts back what a killed study left, reads each setting's value and
/// scope, and journals them (under the state directory and in `results`) before anything is
/// changed. None for SQLite (its pragma is set per connection).
pub fn begin(
    url: &DbUrl,
    names: &[String],
    timeouts: &Timeouts,
    results: &Path,
) -> anyhow::Result<Option<StudyHold>> {
    let database = oio_tpcc::dialects::open(url);
    for n in names {
        database.check_study_setting(n)?;
    }
    if !database.server_wide_settings() {
        return Ok(None);
    }
    let mut s = open(&*database, timeouts)?;
    let (recovered, kept) =
        oio_tpcc::restore::recover(&*database, &mut s, timeouts, Some(Kind::Study))?;
    announce(&recovered);
    let lock = match kept {
        Some(Locking::Held(l)) => l,
        Some(Locking::Busy(holder)) => anyhow::bail!(
            "another study is changing this server's settings: {holder}; two at once would each measure the other's settings and put back the wrong values. Wait for it to finish (or stop it), then run this one"
        ),
        None => anyhow::bail!("the study lock was not taken (a bug in oio)"),
    };
    let server = recovered.server.unwrap_or_default();
    let mut saved = Vec::new();
    for n in names {
        let found = database.study_setting(&mut s, n)?;
        saved.push(Saved {
            name: n.clone(),
            value: found.value.clone(),
            change: oio_tpcc::settings::change(n, &found),
        });
    }
    let mut journal = Journal::new(Kind::Study, url.dialect().name(), &server, &url.redacted());
    std::fs::create_dir_all(results)
        .map_err(|e| anyhow::anyhow!("creating {}: {e}", results.display()))?;
    let results = std::fs::canonicalize(results).unwrap_or_else(|_| results.to_path_buf());
    journal.results = Some(results.display().to_string());
    journal.settings = saved.iter().map(|x| x.change.clone()).collect();
    let entry = oio_tpcc::settings::entry_path(&server, Kind::Study)?;
    oio_tpcc::settings::write_atomic(&entry, &journal)?;
    oio_tpcc::settings::write_atomic(&results.join(oio_tpcc::settings::RESULTS_COPY), &journal)?;
    Ok(Some(StudyHold {
        database,
        _lock: lock,
        journal,
        entry,
        saved,
    }))
}

impl StudyHold {
    /// Applies `settings` at each one's scope (PostgreSQL: ALTER SYSTEM, or ALTER DATABASE /
    /// ROLE where the setting is set per database or role, and a reload, waiting up to 5 s
    /// until a new session sees each value; MariaDB/MySQL: SET GLOBAL). Returns warnings for
    /// values a new session does not show as given.
    pub fn apply(
        &self,
        settings: &[(String, String)],
        timeouts: &Timeouts,
    ) -> anyhow::Result<Vec<String>> {
        let database = &*self.database;
        let mut s = open(database, timeouts)?;
        for (n, v) in settings {
            let scope = self
                .saved
                .iter()
                .find(|x| x.name == *n)
                .map(|x| x.change.scope.clone())
                .unwrap_or(oio_tpcc::settings::Scope::Server);
            let sql = database.set_setting_sql(n, &scope, v);
            s.batch(&sql).map_err(|e| {
                anyhow::anyhow!("{sql}: {e} (a study needs {})", database.study_privilege())
            })?;
        }
        reload_and_wait(database, &mut s, settings, timeouts)
    }

    /// The SQL a user runs to put back the settings named in `touched` by hand: each
    /// statement, then PostgreSQL's reload.
    pub fn restore_script(&self, touched: &[&str]) -> Vec<String> {
        let mut j = self.journal.clone();
        j.settings.retain(|c| touched.contains(&c.name.as_str()));
        oio_tpcc::restore::restore_script(&*self.database, &j)
    }

    /// The journal entry under the state directory.
    pub fn entry(&self) -> &Path {
        &self.entry
    }

    /// Puts the saved settings back at their scopes (and reloads), checks a new session sees
    /// them, then removes the journal entry and releases the lock.
    pub fn restore(self, timeouts: &Timeouts) -> anyhow::Result<()> {
        let database = &*self.database;
        let mut s = open(database, timeouts)?;
        oio_tpcc::restore::put_back(database, &mut s, &self.journal, &self.entry)?;
        let back: Vec<(String, String)> = self
            .saved
            .iter()
            .map(|x| (x.name.clone(), x.value.clone()))
            .collect();
        let off = reload_and_wait(database, &mut s, &back, timeouts)?;
        if !off.is_empty() {
            anyhow::bail!(
                "settings not back as they were: {}; the journal {} is kept, and the next oio tpcc command on this server tries again",
                off.join("; "),
                self.entry.display()
            );
        }
        oio_tpcc::settings::remove_entry(&self.entry)?;
        oio_tpcc::settings::mark_restored(&self.journal);
        Ok(())
    }
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

/// A MariaDB/MySQL run's `performance_schema` setup: the rows oio enabled for its wait
/// profile, journaled and put back when dropped through [`InstrumentsHold::restore`].
pub struct InstrumentsHold {
    database: Arc<dyn Database>,
    _lock: oio_tpcc::restore::Lock,
    journal: Journal,
    entry: PathBuf,
}

/// Enables the `performance_schema` instruments and consumers a MariaDB/MySQL run's wait
/// profile needs, announcing it, after journaling how they were (so a killed run's are put
/// back by the next oio command). None when nothing needs enabling, the server is not
/// MariaDB/MySQL, another run holds them (it puts them back), or they cannot be read (the
/// run's sampler then says why its profile is partial).
pub fn enable_instruments(url: &DbUrl, timeouts: &Timeouts) -> Option<InstrumentsHold> {
    let database = oio_tpcc::dialects::open(url);
    let enable = database.enable_instruments_sql()?;
    let mut s = open(&*database, timeouts).ok()?;
    let rows = match database.instruments_off(&mut s) {
        Ok(r) if !r.is_empty() => r,
        Ok(_) => return None,
        Err(e) => {
            style::print_warning(&format!("performance_schema setup not read: {e}"));
            return None;
        }
    };
    let lock = match oio_tpcc::restore::try_lock(&*database, Kind::Instruments, timeouts) {
        Ok(Locking::Held(l)) => l,
        _ => return None,
    };
    let server = database.server_identity(&mut s).ok()?;
    let mut journal = Journal::new(
        Kind::Instruments,
        url.dialect().name(),
        &server,
        &url.redacted(),
    );
    journal.instruments = rows;
    let entry = oio_tpcc::settings::entry_path(&server, Kind::Instruments).ok()?;
    if let Err(e) = oio_tpcc::settings::write_atomic(&entry, &journal) {
        style::print_warning(&format!(
            "performance_schema left as it is (its setup could not be journaled: {e}); the run's waits are partial"
        ));
        return None;
    }
    if let Err(e) = s.batch(enable) {
        let _ = std::fs::remove_file(&entry);
        style::print_warning(&format!(
            "performance_schema's wait instruments could not be enabled ({e}); the run's waits are partial"
        ));
        return None;
    }
    style::print_notice(&format!(
        "performance_schema: oio enabled {} wait instruments/consumers server-wide for this run's wait profile; they are put back afterwards",
        journal.instruments.len()
    ));
    Some(InstrumentsHold {
        database,
        _lock: lock,
        journal,
        entry,
    })
}

impl InstrumentsHold {
    /// Puts the instruments back as they were, removes the journal entry, says so.
    pub fn restore(self, timeouts: &Timeouts) -> anyhow::Result<()> {
        let mut s = open(&*self.database, timeouts)?;
        oio_tpcc::restore::put_back(&*self.database, &mut s, &self.journal, &self.entry)?;
        oio_tpcc::settings::remove_entry(&self.entry)?;
        style::print_notice(&format!(
            "performance_schema: the {} wait instruments/consumers oio enabled are put back",
            self.journal.instruments.len()
        ));
        Ok(())
    }
}

/// What a second Ctrl-C prints while the study's settings are on the server: each setting the
/// study changed, its value now and before, and the SQL that puts them back. None when the
/// study changed none (SQLite's pragma is per connection).
pub fn left_changed(
    hold: &StudyHold,
    now: &std::collections::BTreeMap<String, String>,
) -> Option<String> {
    let touched: Vec<&Saved> = hold
        .saved
        .iter()
        .filter(|s| now.contains_key(&s.name))
        .collect();
    if touched.is_empty() {
        return None;
    }
    let list: Vec<String> = touched
        .iter()
        .map(|s| format!("{}={} (was {})", s.name, now[&s.name], s.value))
        .collect();
    let names: Vec<&str> = touched.iter().map(|s| s.name.as_str()).collect();
    let sql: Vec<String> = hold
        .restore_script(&names)
        .iter()
        .map(|q| format!("  {q};"))
        .collect();
    Some(format!(
        "The server keeps the settings the study changed: {}. To put them back, run as a superuser:\n{}\nor run any oio tpcc command on this server: it puts them back from the journal {}",
        list.join(", "),
        sql.join("\n"),
        hold.entry().display()
    ))
}
