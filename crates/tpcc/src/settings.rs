//! Server settings oio changes for a while (a tuning study's `--set`, MariaDB/MySQL's
//! `performance_schema` instruments a run enables): each change journaled before it is made,
//! under a server-side lock, and put back afterwards — by the command that made it, or, after
//! a crash, by the next `oio tpcc` command on that server.
//!
//! Why a journal: a process killed with SIGKILL (or a lost machine) runs no cleanup, and
//! PostgreSQL's `ALTER SYSTEM` persists in `postgresql.auto.conf` across restarts, so a
//! `fsync=off` left behind would silently change every later measurement. The journal is one
//! JSON file per server and kind under the state directory ([`state_dir`]), keyed by the
//! server's identity (PostgreSQL `system_identifier` and port, whatever the database; MySQL
//! `@@server_uuid`, MariaDB host, port and data directory), written atomically; a study also
//! keeps a copy beside its results. The lock is the server's (PostgreSQL advisory lock, checked
//! against holders in every database; MariaDB/MySQL `GET_LOCK`), held by a session that lives as long as the changes, so it goes
//! with the process however it ends and a second oio anywhere sees it.

use crate::error::{Result, TpccError};

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The journal's schema name.
pub const JOURNAL_SCHEMA: &str = "oio.settings_journal";
/// The largest journal file oio reads (a journal holds a few settings and at most a few
/// hundred instrument names).
const JOURNAL_MAX_BYTES: u64 = 4 << 20;

/// Where a setting was changed: server-wide, or for one database and/or role (PostgreSQL's
/// `ALTER DATABASE … SET`, `ALTER ROLE … SET`, `ALTER ROLE … IN DATABASE … SET`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Scope {
    /// `ALTER SYSTEM` (PostgreSQL), `SET GLOBAL` (MariaDB/MySQL).
    Server,
    /// One database.
    Database {
        /// Its name.
        database: String,
    },
    /// One role.
    Role {
        /// Its name.
        role: String,
    },
    /// One role in one database.
    DatabaseRole {
        /// The database.
        database: String,
        /// The role.
        role: String,
    },
}

impl Scope {
    /// "server-wide", "for database tpcc", …
    pub fn describe(&self) -> String {
        match self {
            Scope::Server => "server-wide".into(),
            Scope::Database { database } => format!("for database {database}"),
            Scope::Role { role } => format!("for role {role}"),
            Scope::DatabaseRole { database, role } => {
                format!("for role {role} in database {database}")
            }
        }
    }
}

/// One setting oio changed, and how it was before.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The setting's name (letters, digits, `_` and `.`).
    pub name: String,
    /// Where it is changed and put back.
    pub scope: Scope,
    /// Its value at that scope before, in a form the server accepts back (units kept:
    /// `8MB`); None when it was not set there (put back by a reset).
    pub before: Option<String>,
}

/// One row of MariaDB/MySQL's `performance_schema` setup tables as it was before oio
/// enabled it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstrumentRow {
    /// `setup_instruments` or `setup_consumers`.
    pub table: String,
    /// The instrument's or consumer's name.
    pub name: String,
    /// `YES` or `NO`.
    pub enabled: String,
    /// `YES` or `NO` (instruments only).
    pub timed: Option<String>,
}

/// What an entry journals, and which lock its owner holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A tuning study's `--set` settings.
    Study,
    /// The `performance_schema` instruments a MariaDB/MySQL run enabled.
    Instruments,
}

impl Kind {
    fn file(self) -> &'static str {
        match self {
            Kind::Study => "study.json",
            Kind::Instruments => "instruments.json",
        }
    }

    /// The server-side lock's name (MariaDB/MySQL `GET_LOCK`).
    pub fn lock_name(self) -> &'static str {
        match self {
            Kind::Study => "oio-tpcc-study",
            Kind::Instruments => "oio-tpcc-instruments",
        }
    }

    /// The server-side lock's key (PostgreSQL advisory lock).
    pub fn lock_key(self) -> i64 {
        match self {
            Kind::Study => i64::from_be_bytes(*b"oiostudy"),
            Kind::Instruments => i64::from_be_bytes(*b"oioinstr"),
        }
    }

    pub(crate) fn what(self) -> &'static str {
        match self {
            Kind::Study => "a tuning study",
            Kind::Instruments => "a run's performance_schema setup",
        }
    }
}

/// One journal entry: what one oio process changed on one server.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Journal {
    /// [`JOURNAL_SCHEMA`].
    pub schema: String,
    /// 1.
    pub schema_version: u32,
    /// What it journals.
    pub kind: Kind,
    /// `postgres` or `mysql`.
    pub engine: String,
    /// The server's identity (the entry's key).
    pub server: String,
    /// The database URL, password removed.
    pub url: String,
    /// The process that made the changes, and where.
    pub pid: u32,
    /// Its host.
    pub host: String,
    /// When it started (RFC 3339).
    pub started: String,
    /// The results directory, when the owner had one (a study keeps a copy there).
    pub results: Option<String>,
    /// The settings changed.
    pub settings: Vec<Change>,
    /// The performance_schema rows changed.
    pub instruments: Vec<InstrumentRow>,
}

impl Journal {
    /// A new entry of this process.
    pub fn new(kind: Kind, engine: &str, server: &str, url: &str) -> Journal {
        Journal {
            schema: JOURNAL_SCHEMA.into(),
            schema_version: 1,
            kind,
            engine: engine.into(),
            server: server.into(),
            url: url.into(),
            pid: std::process::id(),
            host: oio_core::host::HostInfo::detect().hostname,
            started: oio_core::host::now_rfc3339(),
            results: None,
            settings: Vec::new(),
            instruments: Vec::new(),
        }
    }

    /// "fsync=on, work_mem reset (for database tpcc)": what putting it back sets.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .settings
            .iter()
            .map(|c| {
                let v = match &c.before {
                    Some(v) => format!("{}={v}", c.name),
                    None => format!("{} reset", c.name),
                };
                match c.scope {
                    Scope::Server => v,
                    _ => format!("{v} ({})", c.scope.describe()),
                }
            })
            .collect();
        if !self.instruments.is_empty() {
            parts.push(format!(
                "performance_schema: {} setup rows back as they were (enabled/timed)",
                self.instruments.len()
            ));
        }
        parts.join(", ")
    }
}

/// oio's state directory: `$XDG_STATE_HOME/oio` when set, else `/var/lib/oio` for root and
/// `~/.local/state/oio` for others.
pub fn state_dir() -> Option<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_STATE_HOME").filter(|x| !x.is_empty()) {
        return Some(PathBuf::from(x).join("oio"));
    }
    use std::os::unix::fs::MetadataExt;
    if std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0) {
        return Some(PathBuf::from("/var/lib/oio"));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".local/state/oio"))
}

/// The directory of one server's entries.
pub fn server_dir(server: &str) -> Result<PathBuf> {
    let base = state_dir().ok_or_else(|| {
        TpccError::Invalid(
            "no state directory for oio's settings journal: set XDG_STATE_HOME or HOME".into(),
        )
    })?;
    let key = oio_core::text::slug(server, 200);
    if key.is_empty() {
        return Err(TpccError::Invalid(format!(
            "the server's identity '{server}' gives no file name for its settings journal"
        )));
    }
    Ok(base.join("settings-journal").join(key))
}

/// Where an entry of `kind` for `server` lives.
pub fn entry_path(server: &str, kind: Kind) -> Result<PathBuf> {
    Ok(server_dir(server)?.join(kind.file()))
}

/// Writes `j` to `path` atomically: a temporary file beside it, synced, renamed over, the
/// directory synced (a crash leaves the old entry or the new one, never half of one).
pub fn write_atomic(path: &Path, j: &Journal) -> Result<()> {
    use std::io::Write;
    let io = |what: &str, e: std::io::Error| TpccError::Io {
        context: format!("{what} the settings journal {}", path.display()),
        error: e,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| io("creating the directory of", e))?;
    let bytes = serde_json::to_vec_pretty(j)
        .map_err(|e| TpccError::Invalid(format!("encoding the settings journal: {e}")))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("journal"),
        std::process::id()
    ));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(|e| io("writing", e))?;
    f.write_all(&bytes)
        .and_then(|_| f.write_all(b"\n"))
        .and_then(|_| f.sync_all())
        .map_err(|e| io("writing", e))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(|e| io("renaming into place", e))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Removes an entry, and its server's directory when that is left empty.
pub fn remove_entry(path: &Path) -> Result<()> {
    std::fs::remove_file(path).map_err(|e| TpccError::Io {
        context: format!("removing the settings journal {}", path.display()),
        error: e,
    })?;
    if let Some(dir) = path.parent() {
        // Fails, as it should, while another entry of the server is there.
        let _ = std::fs::remove_dir(dir);
    }
    Ok(())
}

/// Reads an entry; a typed error naming the file and what was wrong.
pub fn read_entry(path: &Path) -> Result<Journal> {
    // Through the one input boundary: a FIFO or device planted in the state directory is
    // refused, not waited on or read without end.
    let bytes = match oio_core::input::read_bytes(path, JOURNAL_MAX_BYTES, "a settings journal") {
        Ok(b) => b,
        Err(oio_core::input::InputError::TooLarge { .. }) => {
            return Err(TpccError::Invalid(format!(
                "the settings journal {} is larger than {JOURNAL_MAX_BYTES} bytes: not one oio wrote",
                path.display()
            )))
        }
        Err(oio_core::input::InputError::Io { source, .. }) => {
            return Err(TpccError::Io {
                context: format!("reading the settings journal {}", path.display()),
                error: source,
            })
        }
        Err(e) => return Err(TpccError::Invalid(e.to_string())),
    };
    let j: Journal = serde_json::from_slice(&bytes).map_err(|e| {
        TpccError::Invalid(format!(
            "the settings journal {} is not an {JOURNAL_SCHEMA} document: {e} (line {}, column {})",
            path.display(),
            e.line(),
            e.column()
        ))
    })?;
    if j.schema != JOURNAL_SCHEMA || j.schema_version != 1 {
        return Err(TpccError::Invalid(format!(
            "the settings journal {} is {} version {}; this oio reads {JOURNAL_SCHEMA} version 1",
            path.display(),
            j.schema,
            j.schema_version
        )));
    }
    for c in &j.settings {
        // sp_configure's options have spaces and parentheses; oio writes them only as literals.
        let option = j.engine == crate::url::Dialect::Sqlserver.name() && c.scope == Scope::Server;
        if !(valid_name(&c.name) || option && valid_option_name(&c.name)) {
            return Err(TpccError::Invalid(format!(
                "the settings journal {} names a setting '{}': expected letters, digits, _ and .",
                path.display(),
                c.name
            )));
        }
    }
    Ok(j)
}

/// True for a setting name oio will put in SQL: letters, digits, `_` and `.` only.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// True for a SQL Server `sp_configure` option name (`max degree of parallelism`, `max server
/// memory (MB)`): letters, digits, spaces, `_`, `.`, `-`, `(` and `)`, no space at either end.
/// Such a name reaches SQL only as a string literal.
pub fn valid_option_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name.trim() == name
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " _.-()".contains(c))
}

/// A PostgreSQL string literal holding `v` exactly, whatever `standard_conforming_strings`
/// says: `'…'` with quotes doubled, or `E'…'` with backslashes doubled too when `v` has one.
pub fn pg_literal(v: &str) -> String {
    if v.contains('\\') {
        format!("E'{}'", v.replace('\\', "\\\\").replace('\'', "''"))
    } else {
        format!("'{}'", v.replace('\'', "''"))
    }
}

/// A PostgreSQL identifier, double-quoted with quotes doubled.
pub fn pg_ident(v: &str) -> String {
    format!("\"{}\"", v.replace('"', "\"\""))
}

/// A MariaDB/MySQL value for `SET GLOBAL`: a number bare (numeric variables refuse quoted
/// ones); text of printable ASCII without quote or backslash in single quotes (the same
/// under every `sql_mode`); anything else as a hexadecimal literal `X'…'`, which no
/// `sql_mode` (`NO_BACKSLASH_ESCAPES`, `ANSI_QUOTES`) reads differently.
pub fn mysql_literal(v: &str) -> String {
    if is_number(v) {
        v.to_string()
    } else if v
        .chars()
        .all(|c| (' '..='~').contains(&c) && c != '\'' && c != '\\' && c != '"')
    {
        format!("'{v}'")
    } else {
        let hex: String = v.bytes().map(|b| format!("{b:02X}")).collect();
        format!("X'{hex}'")
    }
}

/// An integer or decimal, optionally signed (`-1`, `0.5`, `1e3` is not: MariaDB reads it).
fn is_number(v: &str) -> bool {
    let digits = v.strip_prefix(['-', '+']).unwrap_or(v);
    let mut parts = digits.splitn(2, '.');
    let whole = parts.next().unwrap_or("");
    let frac = parts.next();
    !whole.is_empty()
        && whole.len() <= 40
        && whole.bytes().all(|b| b.is_ascii_digit())
        && frac
            .is_none_or(|f| !f.is_empty() && f.len() <= 40 && f.bytes().all(|b| b.is_ascii_digit()))
}

/// A MariaDB/MySQL string literal (for names in `performance_schema` updates): see
/// [`mysql_literal`], but never bare.
pub fn mysql_text(v: &str) -> String {
    let l = mysql_literal(v);
    if is_number(v) {
        format!("'{l}'")
    } else {
        l
    }
}

/// Marks the copy beside the results (if any) as put back, so it is not mistaken for work
/// left; failures are ignored (the copy is a record, the state directory's entry the truth).
pub fn mark_restored(j: &Journal) {
    let Some(dir) = &j.results else { return };
    let copy = Path::new(dir).join(RESULTS_COPY);
    if let Ok(mut v) = oio_core::input::read_bytes(&copy, JOURNAL_MAX_BYTES, "a settings journal")
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .ok_or(())
    {
        v["restored"] = serde_json::Value::String(oio_core::host::now_rfc3339());
        if let Ok(b) = serde_json::to_vec_pretty(&v) {
            let tmp = Path::new(dir).join(format!(".{RESULTS_COPY}.tmp"));
            if std::fs::write(&tmp, b).is_ok() {
                let _ = std::fs::rename(&tmp, &copy);
            }
        }
    }
}

/// The name of a study's journal copy in its results directory.
pub const RESULTS_COPY: &str = "settings-journal.json";

/// A setting as a tuning study found it, to put back afterwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StudySetting {
    /// Its value now, as sessions see it (for messages and the comparison after a restore).
    pub value: String,
    /// Where the study changes it and puts it back: where it is set now (PostgreSQL: a
    /// per-database or per-role value wins over the server's, so it is changed there).
    pub scope: Scope,
    /// Its value at that scope, None when it is not set there (PostgreSQL: from
    /// postgresql.conf or the default, so put back by `ALTER SYSTEM RESET`).
    pub before: Option<String>,
}

/// A study setting as found, made a [`Change`].
pub fn change(name: &str, found: &StudySetting) -> Change {
    Change {
        name: name.to_string(),
        scope: found.scope.clone(),
        before: found.before.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_hold_the_value_exactly_in_every_mode() {
        assert_eq!(pg_literal("8MB"), "'8MB'");
        assert_eq!(pg_literal("it's"), "'it''s'");
        assert_eq!(pg_literal("a\\'b"), "E'a\\\\''b'");
        assert_eq!(mysql_literal("2"), "2");
        assert_eq!(mysql_literal("-1.5"), "-1.5");
        assert_eq!(mysql_literal("READ-COMMITTED"), "'READ-COMMITTED'");
        assert_eq!(mysql_literal("1e3"), "'1e3'");
        assert_eq!(mysql_literal("x\\'; DROP"), "X'785C273B2044524F50'");
        assert_eq!(mysql_literal(""), "''");
        assert_eq!(mysql_text("2"), "'2'");
        assert_eq!(pg_ident("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn a_bad_journal_is_refused_naming_the_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("study.json");
        std::fs::write(&p, b"{\"schema\": 1").unwrap();
        let e = read_entry(&p).unwrap_err().to_string();
        assert!(e.contains("study.json") && e.contains("line 1"), "{e}");
        let mut j = Journal::new(Kind::Study, "postgres", "s", "u");
        j.settings.push(Change {
            name: "fsync; DROP".into(),
            scope: Scope::Server,
            before: None,
        });
        write_atomic(&p, &j).unwrap();
        let e = read_entry(&p).unwrap_err().to_string();
        assert!(e.contains("'fsync; DROP'"), "{e}");
        j.settings[0].name = "fsync".into();
        write_atomic(&p, &j).unwrap();
        assert_eq!(read_entry(&p).unwrap().settings, j.settings);
        // An sp_configure option's name is kept only in a SQL Server journal, server-wide.
        j.settings[0].name = "max degree of parallelism".into();
        write_atomic(&p, &j).unwrap();
        assert!(
            read_entry(&p).is_err(),
            "a PostgreSQL journal naming an option with spaces"
        );
        j.engine = "sqlserver".into();
        write_atomic(&p, &j).unwrap();
        assert_eq!(read_entry(&p).unwrap().settings, j.settings);
        j.settings[0].scope = Scope::Database {
            database: "d".into(),
        };
        write_atomic(&p, &j).unwrap();
        assert!(
            read_entry(&p).is_err(),
            "a scoped configuration is an identifier"
        );
    }
}
