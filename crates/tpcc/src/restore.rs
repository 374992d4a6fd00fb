//! A study's hold on a server's settings: the server-side lock a second study meets, and
//! putting journaled changes back ([`put_back`]), by the command that made them or, after a
//! crash, by the next `oio tpcc` command on that server ([`recover`]). The journal itself and
//! the literals that write values are in [`crate::settings`].

use crate::database::Database;
use crate::db::Session;
use crate::error::{Result, TpccError};
use crate::plan::Timeouts;
use crate::settings::*;
use std::path::Path;

/// The server's lock for `kind`, held by a session of its own.
pub struct Lock {
    session: Session,
    kind: Kind,
}

impl Lock {
    /// What the lock is for.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The session holding the lock (the journal's owner runs its changes elsewhere).
    pub fn session(&mut self) -> &mut Session {
        &mut self.session
    }
}

/// Taking a lock: held, or another session's, named as well as the server can.
pub enum Locking {
    /// Ours.
    Held(Lock),
    /// Another holder: who.
    Busy(String),
}

/// The application name a lock's session carries (63 bytes at most: PostgreSQL's limit),
/// so the holder can be named: `oio-tpcc-study pid 4242 on vm`.
pub fn holder_name(kind: Kind) -> String {
    let host = oio_core::host::HostInfo::detect().hostname;
    let mut n = format!("{} pid {} on {host}", kind.lock_name(), std::process::id());
    while n.len() > 63 {
        n.pop();
    }
    n
}

/// Tries the server's lock for `kind` on a new session, without waiting.
pub fn try_lock(database: &dyn Database, kind: Kind, timeouts: &Timeouts) -> Result<Locking> {
    let mut s = database.connect(&holder_name(kind), crate::plan::SqliteSync::Full, timeouts)?;
    match database.try_lock(&mut s, kind)? {
        None => Ok(Locking::Held(Lock { session: s, kind })),
        Some(holder) => Ok(Locking::Busy(holder)),
    }
}

/// The statements that put `c` back.
pub fn restore_sql(database: &dyn Database, c: &Change) -> String {
    database.restore_setting_sql(c)
}

/// Every statement that puts a journal entry back, then the reload if the dialect needs one:
/// what oio runs, and what it prints for a user to run when it cannot.
pub fn restore_script(database: &dyn Database, j: &Journal) -> Vec<String> {
    let mut out: Vec<String> = j
        .settings
        .iter()
        .map(|c| database.restore_setting_sql(c))
        .collect();
    out.extend(database.restore_instruments_sql(&j.instruments));
    if let Some(reload) = database
        .reload_settings_sql()
        .filter(|_| !j.settings.is_empty())
    {
        out.push(reload.to_string());
    }
    out
}

/// Runs the restore script of `j` on `s`; an error names the statement that failed and the
/// whole script to run by hand.
pub fn put_back(database: &dyn Database, s: &mut Session, j: &Journal, path: &Path) -> Result<()> {
    let script = restore_script(database, j);
    for sql in &script {
        if let Err(e) = s.batch(sql) {
            return Err(TpccError::SettingsLeft {
                journal: path.display().to_string(),
                what: format!(
                    "{} (pid {} on {}, started {}) changed settings that oio could not put back: {sql}: {e}",
                    j.kind.what(),
                    j.pid,
                    j.host,
                    j.started
                ),
                sql: script.iter().map(|q| format!("  {q};")).collect::<Vec<_>>().join("\n"),
            });
        }
    }
    Ok(())
}

/// What [`recover`] did.
#[derive(Debug, Default)]
pub struct Recovered {
    /// One line per entry put back: what was restored and whose it was.
    pub restored: Vec<String>,
    /// Entries left alone because their owner is alive: who holds them and what they changed.
    pub busy: Vec<String>,
    /// The server's identity, when it was read.
    pub server: Option<String>,
}

/// Finds the journal entries this server's earlier oio processes left (killed before they
/// put their changes back) and puts them back, each under its own lock; an entry whose lock
/// another session holds belongs to a live process and is left alone (named in
/// [`Recovered::busy`]). `keep` returns the lock of that kind instead of releasing it (a
/// study keeps its own). A failed restore is [`TpccError::SettingsLeft`], with the SQL to
/// run by hand.
pub fn recover(
    database: &dyn Database,
    s: &mut Session,
    timeouts: &Timeouts,
    keep: Option<Kind>,
) -> Result<(Recovered, Option<Locking>)> {
    let mut out = Recovered::default();
    let server = database.server_identity(s)?;
    out.server = Some(server.clone());
    let mut kept = None;
    for kind in [Kind::Study, Kind::Instruments] {
        let path = entry_path(&server, kind)?;
        let exists = path.exists();
        if !exists && keep != Some(kind) {
            continue;
        }
        let locking = try_lock(database, kind, timeouts)?;
        let lock = match locking {
            Locking::Busy(holder) => {
                if exists {
                    let what = read_entry(&path).map(|j| j.describe()).unwrap_or_default();
                    out.busy.push(format!("{holder} ({}: {what})", kind.what()));
                }
                if keep == Some(kind) {
                    kept = Some(Locking::Busy(holder));
                }
                continue;
            }
            Locking::Held(l) => l,
        };
        if exists {
            let j = read_entry(&path)?;
            if j.server != server {
                return Err(TpccError::Invalid(format!(
                    "the settings journal {} is for server '{}', not this one ('{server}'): not touched",
                    path.display(),
                    j.server
                )));
            }
            put_back(database, s, &j, &path)?;
            if database.reload_settings_sql().is_some() && !j.settings.is_empty() {
                wait_for(database, timeouts, &j.settings)?;
            }
            remove_entry(&path)?;
            mark_restored(&j);
            out.restored.push(format!(
                "put back what {} left changed on this server (pid {} on {}, started {}, stopped before it could): {}",
                kind.what(),
                j.pid,
                j.host,
                j.started,
                j.describe()
            ));
        }
        if keep == Some(kind) {
            kept = Some(Locking::Held(lock));
        }
    }
    Ok((out, kept))
}

/// Waits (up to 5 s) until a new session sees each change's `before` value at server scope
/// (PostgreSQL's reload is asynchronous). Values reset are not compared (the default's
/// spelling is the server's).
fn wait_for(database: &dyn Database, timeouts: &Timeouts, changes: &[Change]) -> Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let mut fresh =
            database.connect("oio-tpcc-settings", crate::plan::SqliteSync::Full, timeouts)?;
        let mut off = false;
        for c in changes.iter().filter(|c| c.scope == Scope::Server) {
            if let Some(v) = &c.before {
                let now =
                    crate::database::one_text(&mut fresh, &database.setting_value_sql(&c.name))
                        .map_err(TpccError::from)?
                        .unwrap_or_default();
                off |= !now.eq_ignore_ascii_case(v);
            }
        }
        if !off || std::time::Instant::now() >= deadline {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
