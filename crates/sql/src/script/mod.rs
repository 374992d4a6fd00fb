//! The script language: pgbench's, so users' pgbench scripts run unchanged, plus sections
//! naming transactions, setup and teardown, and statements for one dialect only.
//!
//! This module knows no database: the runner hands it an [`Executor`] that sends SQL.
//!
//! CONTRACT (the runner relies on exactly this):
//! - [`Script::load`] reads the files (and built-in names) with their weights, and the
//!   user's `--define`s; every error says file, line, column and what was expected.
//! - [`Script::for_dialect`] keeps the statements of one dialect (`\only`), and refuses a
//!   script with nothing to run there.
//! - [`Client`] is one worker's state (variables, random state); [`Client::choose`] draws a
//!   transaction by weight; [`Client::run`] runs it, [`Client::retry`] runs the last one
//!   again with the same random draws (pgbench's retry rule).
//!
//! # The language
//!
//! **pgbench's**, unchanged: SQL commands end at a `;` outside quotes (`'…'`, `E'…'`, `"…"`,
//! `` `…` ``, `$tag$…$tag$`) and comments (`--`, nested `/* */`), and may span lines; `\;` joins
//! statements into one compound command sent at once; a meta-command (a backslash outside
//! quotes) also ends the SQL before it. Quotes follow PostgreSQL's rules: a backslash escapes
//! only inside `E'…'` (a MySQL-style `'it\'s'` must be written `'it''s'`); block comments are
//! kept in the text sent (MySQL's optimizer hints are comments), `--` comments are not.
//! Meta-commands (names case-insensitive; a line ending in a backslash continues on the next):
//!
//! - `\set NAME EXPR` — pgbench's whole expression language: integers (64-bit), doubles,
//!   booleans, NULL; `+ - * / %`, comparisons (`=`, `<>`/`!=`, `<`, `<=`, `>`, `>=`), `AND OR
//!   NOT`, `IS [NOT] NULL|TRUE|FALSE`, `ISNULL`, `NOTNULL`, the bitwise `& | # ~ << >>`,
//!   `CASE WHEN … THEN … [ELSE …] END`, and the functions abs, debug, double, exp, greatest,
//!   hash, hash_fnv1a, hash_murmur2, int, least, ln, mod, permute, pi, pow/power, random,
//!   random_exponential, random_gaussian, random_zipfian, sqrt. Integer overflow and division
//!   by zero are errors. `hash*` and `permute` default their seed to `:default_seed`.
//!   Expressions nest at most 128 levels deep (deeper is a load error).
//! - `\sleep N [us|ms|s]` (N an integer or a `:variable`; seconds by default).
//! - `\gset [PREFIX]` / `\aset [PREFIX]` after a query: its one row (\gset: another row count
//!   is an error) or all its rows (\aset: the last row's values win; no row sets nothing) are
//!   stored in variables named after the columns (the names come from
//!   [`Executor::columns`]; a NULL column is stored as NULL). With `\;` compounds, the rows
//!   are those the executor returns; `\gset` ends its command, so it cannot sit in the middle
//!   of a `\;` compound.
//! - `\if EXPR` / `\elif EXPR` / `\else` / `\endif` (NULL and zero are false).
//! - `\startpipeline` / `\syncpipeline` / `\endpipeline` are accepted and checked for nesting,
//!   but oio sends the statements one after the other (no pipelining).
//! - `\shell` and `\setshell` are refused at load: oio runs no shell commands from a script.
//!
//! **Variables.** `:name` in SQL is replaced by the variable's value; when no such variable is
//! set it stays as written (as pgbench leaves it), `::` casts are never touched, and neither
//! are quoted literals, quoted identifiers and comments. Built-ins: `client_id` (0-based, per
//! worker), `scale` (1 unless defined), `random_seed`, `default_seed` (the hash functions'
//! default seed, the same for every client). Defines (pgbench's `-D NAME=VALUE`) are
//! substituted raw (`FROM :table` works), integers as digits, doubles as SQL numeric literals
//! (NaN and infinities are refused at run time with the position), booleans as TRUE/FALSE,
//! NULL as NULL. **Text read by `\gset`/`\aset` is written through
//! [`Executor::text_literal`]** (quoted for the dialect), where pgbench pastes it raw — so a
//! database's content never becomes SQL; numbers read stay numbers.
//!
//! **oio's additions** (lines starting with a backslash, so they never collide with SQL):
//!
//! - `\transaction NAME [WEIGHT]` starts a named transaction. A file without any is one
//!   transaction named after the file's stem (pgbench's rule), weighted by `FILE@WEIGHT`
//!   (default 1). With `\transaction` sections, `@WEIGHT` multiplies the file's weights. A
//!   weight of 0 is allowed when another transaction's is above 0.
//! - `\setup` and `\teardown` start sections run once, on one connection, before and after the
//!   run; `\transaction` (or the other section) ends them.
//! - `\only DIALECT[,DIALECT...]` keeps the one SQL command after it only on those dialects:
//!   `sqlite`; `postgres` (`postgresql`, `pg`); `mysql` (`mariadb`); `sqlserver` (`mssql`).
//!
//! Built-in scenarios are sources named `builtin:NAME` (see [`builtins`]); their text is in
//! `crates/sql/scenarios/NAME.sql`.
//!
//! # Running
//!
//! Load once ([`Script::load`]), pick the dialect ([`Script::for_dialect`]: a script not passed
//! through it skips every `\only` command), share the [`Script`] between worker threads, and
//! give each worker a [`Client`]. Everything is parsed at load: SQL is pre-split into literal
//! pieces and variable slots, expressions into trees, variables into numbered slots, so a
//! transaction's run is a walk over commands and one string built per statement.
//! Random draws (xoshiro256**, seeded per client) are not bit-equal to pgbench's, but follow
//! its documented distributions; `hash*` give pgbench's values; `permute` is a permutation of
//! oio's own construction (pgbench's values differ).

mod expr;
mod load;
mod random;
mod scenarios;

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use expr::{At, Env, Var};
use load::{Amount, Block, CPos, Cmd, Gset, Interner, Piece, Sql};
use random::Rng;

pub use scenarios::{builtin_text, builtins};

/// The largest script file read (larger is a load error; reads are bounded).
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Where in a script: file name as given, 1-based line and column.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Pos {
    /// The file as given (or `builtin:NAME`).
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub col: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// Why a script cannot be loaded (Display: "FILE:LINE:COL: message" + the line and a caret).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptError {
    pos: Pos,
    message: String,
    line: Option<String>,
}

impl ScriptError {
    pub(crate) fn new(
        file: &str,
        line: u32,
        col: u32,
        message: String,
        shown: Option<String>,
    ) -> ScriptError {
        ScriptError {
            pos: Pos {
                file: file.to_string(),
                line,
                col,
            },
            message,
            line: shown,
        }
    }

    /// Where the error is.
    pub fn pos(&self) -> &Pos {
        &self.pos
    }

    /// What was wrong and what was expected (without the position).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.pos, self.message)?;
        if let Some(line) = &self.line {
            // Long lines are shown as a window around the column.
            let chars: Vec<char> = line.chars().collect();
            let col = (self.pos.col as usize).saturating_sub(1);
            let from = col.saturating_sub(100);
            let to = (col + 100).min(chars.len());
            let shown: String = chars[from.min(to)..to].iter().collect();
            let pad: String = chars[from.min(to)..col.min(to).max(from.min(to))]
                .iter()
                .map(|c| if *c == '\t' { '\t' } else { ' ' })
                .collect();
            let pad_extra = " ".repeat(col.saturating_sub(to.max(from)));
            write!(f, "\n  {shown}\n  {pad}{pad_extra}^")?;
        }
        Ok(())
    }
}

impl std::error::Error for ScriptError {}

#[derive(Clone, Debug, PartialEq, Eq)]
enum SourceKind {
    File(PathBuf),
    Builtin(&'static scenarios::Scenario),
    /// A script's text as a result recorded it (`oio rerun`), under the name it had.
    Text {
        name: String,
        text: String,
    },
}

/// A source as the command line names it: a file or `builtin:NAME`, with `@WEIGHT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    written: String,
    kind: SourceKind,
    weight: Option<u32>,
}

impl Source {
    /// A file with an optional weight (as `PATH[@WEIGHT]` would give).
    pub fn file(path: impl Into<PathBuf>, weight: Option<u32>) -> Source {
        let path = path.into();
        let mut written = path.display().to_string();
        if let Some(w) = weight {
            written.push_str(&format!("@{w}"));
        }
        Source {
            written,
            kind: SourceKind::File(path),
            weight,
        }
    }

    /// A script's text as a result recorded it, named `name` (its file as first given) and
    /// written as `written` (with its `@WEIGHT`): `oio rerun` runs what ran, not what the file
    /// holds now.
    pub fn text(name: &str, written: &str, text: String, weight: Option<u32>) -> Source {
        Source {
            written: written.to_string(),
            kind: SourceKind::Text {
                name: name.to_string(),
                text,
            },
            weight,
        }
    }

    /// The name positions use: the path as given, or `builtin:NAME`.
    pub fn name(&self) -> String {
        match &self.kind {
            SourceKind::File(p) => p.display().to_string(),
            SourceKind::Builtin(s) => format!("builtin:{}", s.name),
            SourceKind::Text { name, .. } => name.clone(),
        }
    }

    /// Whether it names a built-in scenario.
    pub fn is_builtin(&self) -> bool {
        matches!(self.kind, SourceKind::Builtin(_))
    }

    /// The `@WEIGHT` given, if any.
    pub fn weight(&self) -> Option<u32> {
        self.weight
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.written)
    }
}

impl FromStr for Source {
    type Err = ScriptError;

    fn from_str(s: &str) -> Result<Source, ScriptError> {
        let arg_err = |col: usize, message: String| {
            ScriptError::new(s, 1, col as u32, message, Some(s.to_string()))
        };
        let (path, weight) = match s.rfind('@') {
            Some(k) => {
                let w = &s[k + 1..];
                let col = s[..k].chars().count() + 2;
                match w.parse::<u32>() {
                    Ok(w) if !w.to_string().is_empty() => (&s[..k], Some(w)),
                    _ => {
                        return Err(arg_err(
                            col,
                            format!(
                                "invalid weight '{w}' in FILE@WEIGHT: expected a whole number from 0 to {}",
                                u32::MAX
                            ),
                        ))
                    }
                }
            }
            None => (s, None),
        };
        if path.is_empty() {
            return Err(arg_err(
                1,
                "expected a file name or builtin:NAME (with an optional @WEIGHT)".into(),
            ));
        }
        let kind = if let Some(name) = path.strip_prefix("builtin:") {
            match scenarios::find(name) {
                Some(sc) => SourceKind::Builtin(sc),
                None => {
                    let known: Vec<&str> = builtins().iter().map(|(n, _)| *n).collect();
                    return Err(arg_err(
                        9,
                        format!(
                            "unknown built-in scenario '{name}': expected one of {}",
                            known.join(", ")
                        ),
                    ));
                }
            }
        } else {
            SourceKind::File(PathBuf::from(path))
        };
        Ok(Source {
            written: s.to_string(),
            kind,
            weight,
        })
    }
}

/// A value of the language.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// SQL's and pgbench's NULL.
    Null,
    /// A boolean.
    Bool(bool),
    /// A 64-bit integer.
    Int(i64),
    /// A double.
    Double(f64),
    /// Text (read from the database by `\gset`/`\aset`).
    Text(String),
}

impl fmt::Display for Value {
    /// As pgbench's `debug()` shows it: `int 5`, `double 2.5`, `boolean true`, `null`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "boolean {b}"),
            Value::Int(i) => write!(f, "int {i}"),
            Value::Double(d) => write!(f, "double {d}"),
            Value::Text(s) => write!(f, "text {s:?}"),
        }
    }
}

/// A transaction as the runner reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransactionInfo {
    /// Its name (`\transaction NAME`, or the file's stem).
    pub name: String,
    /// Its weight (`@WEIGHT` applied).
    pub weight: u32,
    /// The source it comes from, as written.
    pub source: String,
    /// How many SQL commands it has.
    pub statements: u32,
}

#[derive(Clone, Debug)]
struct Txn {
    name: String,
    weight: u32,
    source: String,
    at: CPos,
    block: Block,
}

/// Variable names and their slots.
#[derive(Clone, Debug, Default)]
struct Vars {
    names: Vec<String>,
    index: HashMap<String, u32>,
}

const CLIENT_ID: u32 = 0;
const SCALE: u32 = 1;
const RANDOM_SEED: u32 = 2;
const DEFAULT_SEED: u32 = 3;

impl Vars {
    fn new() -> Vars {
        let mut v = Vars::default();
        for n in ["client_id", "scale", "random_seed", "default_seed"] {
            v.intern(n);
        }
        v
    }
}

impl Interner for Vars {
    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&s) = self.index.get(name) {
            return s;
        }
        let s = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), s);
        s
    }
    fn default_seed(&self) -> u32 {
        DEFAULT_SEED
    }
}

/// A loaded script: its transactions (weighted), setup and teardown.
#[derive(Clone, Debug)]
pub struct Script {
    files: Vec<String>,
    texts: Vec<(String, String)>,
    txns: Vec<Txn>,
    setup: Vec<Block>,
    teardown: Vec<Block>,
    vars: Vars,
    defines: Vec<(u32, String)>,
    /// (file index, dialect bits refused, why).
    refusals: Vec<(u32, u8, &'static str)>,
    cumulative: Vec<u64>,
    total: u64,
}

/// Reads a file, at most [`MAX_FILE_BYTES`], as UTF-8 text.
fn read_text(name: &str, path: &Path) -> Result<String, ScriptError> {
    let at1 = |message: String| ScriptError::new(name, 1, 1, message, None);
    // Through oio's one input boundary: a FIFO, a device or /proc/kmsg is refused for what it
    // is before anything blocks on it, and the read is bounded.
    let bytes =
        oio_core::input::read_bytes(path, MAX_FILE_BYTES, "a script (text), at most 16 MiB")
            .map_err(|e| match e {
                oio_core::input::InputError::TooLarge { .. } => at1(format!(
                    "the file is larger than {} MiB: expected a script (text) of at most that",
                    MAX_FILE_BYTES >> 20
                )),
                e => at1(format!("cannot read the script: {e}")),
            })?;
    match String::from_utf8(bytes) {
        Ok(s) => Ok(s),
        Err(e) => {
            let bytes = e.as_bytes();
            let bad = e.utf8_error().valid_up_to();
            let line_start = bytes[..bad]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |p| p + 1);
            let line = bytes[..bad].iter().filter(|&&b| b == b'\n').count() as u32 + 1;
            let prefix = std::str::from_utf8(&bytes[line_start..bad]).unwrap_or("");
            let col = prefix.chars().count() as u32 + 1;
            let line_end = bytes[bad..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |p| bad + p);
            let shown = String::from_utf8_lossy(&bytes[line_start..line_end]).into_owned();
            Err(ScriptError::new(
                name,
                line,
                col,
                format!(
                    "the file is not UTF-8 (byte 0x{:02x} at byte offset {bad}): expected UTF-8 text",
                    bytes[bad]
                ),
                Some(shown),
            ))
        }
    }
}

impl Script {
    /// Reads every source (files read bounded), applies the defines (NAME, VALUE).
    pub fn load(sources: &[Source], defines: &[(String, String)]) -> Result<Script, ScriptError> {
        if sources.is_empty() {
            return Err(ScriptError::new(
                "(no script)",
                1,
                1,
                "no script given: expected FILE[@WEIGHT] or builtin:NAME".into(),
                None,
            ));
        }
        let mut s = Script {
            files: Vec::new(),
            texts: Vec::new(),
            txns: Vec::new(),
            setup: Vec::new(),
            teardown: Vec::new(),
            vars: Vars::new(),
            defines: Vec::new(),
            refusals: Vec::new(),
            cumulative: Vec::new(),
            total: 0,
        };
        for (k, src) in sources.iter().enumerate() {
            let name = src.name();
            let (text, stem) = s.source_text(k, src, &name)?;
            let loaded = load::load(k as u32, &name, &text, &stem, &mut s.vars)?;
            s.files.push(name.clone());
            s.texts.push((name.clone(), text));
            if let Some(b) = loaded.setup {
                s.setup.push(b);
            }
            if let Some(b) = loaded.teardown {
                s.teardown.push(b);
            }
            s.add_txns(k, src, loaded.txns, loaded.sectioned)?;
        }
        if s.txns.is_empty() {
            let file = s.files.last().cloned().unwrap_or_default();
            return Err(ScriptError::new(
                &file,
                1,
                1,
                "no transaction to run (only \\setup or \\teardown sections): expected SQL commands outside them, or a \\transaction section".into(),
                s.texts.last().and_then(|(_, t)| t.lines().next().map(str::to_string)),
            ));
        }
        let mut acc = 0u64;
        for t in &s.txns {
            acc += u64::from(t.weight);
            s.cumulative.push(acc);
        }
        s.total = acc;
        if acc == 0 {
            let t = &s.txns[0];
            return Err(s.error(
                t.at,
                "every transaction has weight 0: expected at least one with a weight above 0"
                    .into(),
            ));
        }
        s.define(defines)?;
        Ok(s)
    }

    /// A source's text and the stem its implicit transaction is named by; a built-in's
    /// refusals are noted for source `k`.
    fn source_text(
        &mut self,
        k: usize,
        src: &Source,
        name: &str,
    ) -> Result<(String, String), ScriptError> {
        let stem_of = |p: &std::path::Path| {
            p.file_stem()
                .map_or_else(|| name.to_string(), |s| s.to_string_lossy().into_owned())
        };
        Ok(match &src.kind {
            SourceKind::File(p) => (read_text(name, p)?, stem_of(p)),
            SourceKind::Builtin(sc) => {
                for &(bits, why) in sc.refuses {
                    self.refusals.push((k as u32, bits, why));
                }
                (sc.text.to_string(), sc.name.to_string())
            }
            SourceKind::Text { name: n, text } => {
                let stem = std::path::Path::new(n)
                    .file_stem()
                    .map_or_else(|| n.clone(), |s| s.to_string_lossy().into_owned());
                (text.clone(), stem)
            }
        })
    }

    /// Source `k`'s transactions, weighted by the source's weight (a section's own weight
    /// times it); a file without sections names its one transaction apart from an earlier
    /// one of the same name, sections must be named apart.
    fn add_txns(
        &mut self,
        k: usize,
        src: &Source,
        txns: Vec<load::LTxn>,
        sectioned: bool,
    ) -> Result<(), ScriptError> {
        let (name, text) = (&self.texts[k].0, &self.texts[k].1);
        let implicit = !sectioned;
        for t in txns {
            let weight = if implicit {
                src.weight.unwrap_or(1)
            } else {
                let w = t.weight.unwrap_or(1);
                w.checked_mul(src.weight.unwrap_or(1)).ok_or_else(|| {
                    load::error_at(
                        name,
                        text,
                        t.at.line,
                        t.at.col,
                        format!(
                            "transaction '{}': weight {w} times {} is too large: expected at most {}",
                            t.name,
                            src.weight.unwrap_or(1),
                            u32::MAX
                        ),
                    )
                })?
            };
            let mut tname = t.name.clone();
            if let Some(prev) = self.txns.iter().find(|x| x.name == tname) {
                if implicit {
                    let mut n = 2;
                    while self
                        .txns
                        .iter()
                        .any(|x| x.name == format!("{}#{n}", t.name))
                    {
                        n += 1;
                    }
                    tname = format!("{}#{n}", t.name);
                } else {
                    return Err(load::error_at(
                        name,
                        text,
                        t.at.line,
                        t.at.col,
                        format!(
                            "a transaction named '{tname}' already exists ({}:{}:{}): expected a distinct name",
                            self.files[prev.at.file as usize], prev.at.line, prev.at.col
                        ),
                    ));
                }
            }
            self.txns.push(Txn {
                name: tname,
                weight,
                source: src.written.clone(),
                at: t.at,
                block: t.block,
            });
        }
        Ok(())
    }

    /// The defines (`-D NAME=VALUE`), checked; a later one of a name replaces an earlier.
    fn define(&mut self, defines: &[(String, String)]) -> Result<(), ScriptError> {
        for (name, value) in defines {
            let d = format!("-D {name}={value}");
            if name.is_empty() || !name.chars().all(load::is_name_char) {
                return Err(ScriptError::new(
                    &d,
                    1,
                    4,
                    format!("invalid variable name '{name}' in a define: expected letters, digits and '_'"),
                    Some(d.clone()),
                ));
            }
            if value.contains('\0') {
                return Err(ScriptError::new(
                    &d,
                    1,
                    name.chars().count() as u32 + 5,
                    "a NUL byte in a define's value: expected text".into(),
                    None,
                ));
            }
            let slot = self.vars.intern(name);
            self.defines.retain(|(sl, _)| *sl != slot);
            self.defines.push((slot, value.clone()));
        }
        Ok(())
    }

    fn error(&self, at: CPos, message: String) -> ScriptError {
        let f = at.file as usize;
        load::error_at(&self.files[f], &self.texts[f].1, at.line, at.col, message)
    }

    fn pos(&self, at: CPos) -> Pos {
        Pos {
            file: self.files[at.file as usize].clone(),
            line: at.line,
            col: at.col,
        }
    }

    /// The script as it runs on `dialect` ("sqlite", "postgres", "mysql", ...): `\only` applied;
    /// an error naming the transaction (and source) left with nothing to run there, or the
    /// scenario that refuses the dialect.
    pub fn for_dialect(&self, dialect: &str) -> Result<Script, ScriptError> {
        let first = CPos {
            file: 0,
            line: 1,
            col: 1,
        };
        let Some(bit) = load::dialect_bit(dialect) else {
            return Err(self.error(
                first,
                format!(
                    "unknown dialect '{dialect}': expected {}",
                    load::DIALECT_NAMES
                ),
            ));
        };
        for &(file, bits, why) in &self.refusals {
            if bits & bit != 0 {
                return Err(self.error(
                    CPos { file, ..first },
                    format!(
                        "{} does not run on {dialect}: {why}",
                        self.files[file as usize]
                    ),
                ));
            }
        }
        let keep = |s: &Sql| s.only.is_none_or(|m| m & bit != 0);
        let mut out = self.clone();
        for t in &mut out.txns {
            let before = t.block.statements();
            t.block = t.block.filtered(keep);
            if before > 0 && t.block.statements() == 0 {
                return Err(self.error(
                    t.at,
                    format!(
                        "transaction '{}' (from {}) has no SQL command left on {dialect}: each of its commands is \\only for other dialects (expected a variant for {dialect})",
                        t.name, t.source
                    ),
                ));
            }
        }
        for b in out.setup.iter_mut().chain(out.teardown.iter_mut()) {
            *b = b.filtered(keep);
        }
        Ok(out)
    }

    /// (name, weight, source as written) of each transaction, in order.
    pub fn transactions(&self) -> Vec<TransactionInfo> {
        self.txns
            .iter()
            .map(|t| TransactionInfo {
                name: t.name.clone(),
                weight: t.weight,
                source: t.source.clone(),
                statements: t.block.statements(),
            })
            .collect()
    }

    /// Whether there is a setup section.
    pub fn has_setup(&self) -> bool {
        !self.setup.is_empty()
    }

    /// Whether there is a teardown section.
    pub fn has_teardown(&self) -> bool {
        !self.teardown.is_empty()
    }

    /// Every source's text as loaded (name, text), to record in the result.
    pub fn texts(&self) -> Vec<(String, String)> {
        self.texts.clone()
    }
}

/// Runs script commands against a database.
pub trait Executor {
    /// The executor's error (kept inside [`Failure::Sql`]).
    type Error;
    /// Sends one command (several statements when joined with `\;`) and returns its rows
    /// (empty for statements without rows).
    fn query(&mut self, sql: &str) -> Result<Vec<Vec<Value>>, Self::Error>;
    /// `s` as a string literal of the dialect.
    fn text_literal(&self, s: &str) -> String;
    /// Sleeps for `d` unless the run stops first: false when stopped.
    fn sleep(&mut self, d: Duration) -> bool;
    /// The column names of the rows the last [`query`](Executor::query) returned, in order:
    /// `\gset` and `\aset` name their variables after them (only they call this). The default
    /// knows none, and a `\gset` then fails at run time saying so.
    fn columns(&self) -> Vec<String> {
        Vec::new()
    }
}

/// What a completed run of a transaction did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    /// How many SQL commands were sent.
    pub statements: u32,
}

/// Why a run of a transaction (or setup/teardown) stopped.
#[derive(Debug)]
pub enum Failure<E> {
    /// A statement failed on the database: where it is, the text sent (at most 200 chars), the error.
    Sql {
        /// Where the statement is.
        at: Pos,
        /// The text sent, at most 200 characters.
        sql: String,
        /// The database's error.
        error: E,
    },
    /// The script failed (division by zero, overflow, \gset row count, ...): where and why.
    Script {
        /// Where.
        at: Pos,
        /// Why.
        message: String,
    },
    /// Executor::sleep returned false.
    Stopped,
}

impl<E: fmt::Display> fmt::Display for Failure<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Sql { at, sql, error } => write!(f, "{at}: {error} (sent: {sql})"),
            Failure::Script { at, message } => write!(f, "{at}: {message}"),
            Failure::Stopped => f.write_str("stopped"),
        }
    }
}

/// The debug hook's type: where `debug()` was called, and its argument.
pub type DebugHook<'s> = Box<dyn FnMut(&Pos, &Value) + Send + 's>;

/// One worker's state: variables and random state.
pub struct Client<'s> {
    script: &'s Script,
    vars: Vec<Option<Var>>,
    rng: Rng,
    choose_rng: Rng,
    saved: Rng,
    last: Option<usize>,
    buf: String,
    name_buf: String,
    debug: DebugHook<'s>,
}

impl fmt::Debug for Client<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("vars", &self.vars)
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}

fn truncate_chars(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => s[..i].to_string(),
        None => s.to_string(),
    }
}

impl<'s> Client<'s> {
    /// Worker `client_id` (0-based) with its random state seeded from `seed` and the id.
    pub fn new(script: &'s Script, client_id: u32, seed: u64) -> Client<'s> {
        let mut vars = vec![None; script.vars.names.len()];
        let mut x = seed;
        let default_seed = random::splitmix(&mut x) as i64;
        let mut y = seed ^ u64::from(client_id).wrapping_mul(0xa076_1d64_78bd_642f);
        let rng = Rng::new(random::splitmix(&mut y));
        let choose_rng = Rng::new(random::splitmix(&mut y));
        vars[CLIENT_ID as usize] = Some(Var::Val(Value::Int(i64::from(client_id))));
        vars[SCALE as usize] = Some(Var::Val(Value::Int(1)));
        vars[RANDOM_SEED as usize] = Some(Var::Val(Value::Int(seed as i64)));
        vars[DEFAULT_SEED as usize] = Some(Var::Val(Value::Int(default_seed)));
        for (slot, value) in &script.defines {
            vars[*slot as usize] = Some(Var::Raw(value.clone()));
        }
        Client {
            script,
            vars,
            rng,
            choose_rng,
            saved: rng,
            last: None,
            buf: String::new(),
            name_buf: String::new(),
            debug: Box::new(|pos, v| eprintln!("debug({pos}): {v}")),
        }
    }

    /// Replaces what `debug()` does (by default: a line on stderr).
    pub fn set_debug(&mut self, hook: DebugHook<'s>) {
        self.debug = hook;
    }

    /// A variable's value, if set (defines as [`Value::Text`]).
    pub fn var(&self, name: &str) -> Option<Value> {
        let slot = *self.script.vars.index.get(name)?;
        match self.vars[slot as usize].as_ref()? {
            Var::Val(v) => Some(v.clone()),
            Var::Raw(s) => Some(Value::Text(s.clone())),
        }
    }

    /// Draws the next transaction by weight (an index into `Script::transactions()`).
    pub fn choose(&mut self) -> usize {
        let s = self.script;
        if s.txns.len() == 1 {
            return 0;
        }
        let r = self.choose_rng.below(s.total);
        s.cumulative.partition_point(|&c| c <= r)
    }

    /// Runs transaction `txn` (its random draws saved so `retry` can repeat them).
    pub fn run<E: Executor>(
        &mut self,
        txn: usize,
        exec: &mut E,
    ) -> Result<Done, Failure<E::Error>> {
        let script = self.script;
        self.saved = self.rng;
        self.last = Some(txn);
        self.exec_block(&script.txns[txn].block, exec)
    }

    /// Runs the last transaction again with the same random draws (pgbench's retry rule).
    pub fn retry<E: Executor>(&mut self, exec: &mut E) -> Result<Done, Failure<E::Error>> {
        let script = self.script;
        let Some(txn) = self.last else {
            return Err(Failure::Script {
                at: script.pos(script.txns[0].at),
                message: "retry before any transaction ran".into(),
            });
        };
        self.rng = self.saved;
        self.exec_block(&script.txns[txn].block, exec)
    }

    /// Runs the setup section (no-op without one).
    pub fn setup<E: Executor>(&mut self, exec: &mut E) -> Result<Done, Failure<E::Error>> {
        self.sections(&self.script.setup, exec)
    }

    /// Runs the teardown section (no-op without one).
    pub fn teardown<E: Executor>(&mut self, exec: &mut E) -> Result<Done, Failure<E::Error>> {
        self.sections(&self.script.teardown, exec)
    }

    fn sections<E: Executor>(
        &mut self,
        blocks: &'s [Block],
        exec: &mut E,
    ) -> Result<Done, Failure<E::Error>> {
        let mut statements = 0;
        for b in blocks {
            statements += self.exec_block(b, exec)?.statements;
        }
        Ok(Done { statements })
    }

    fn eval(
        &mut self,
        e: &expr::Expr,
        at: CPos,
    ) -> Result<Value, Failure<std::convert::Infallible>> {
        let script = self.script;
        let debug = &mut self.debug;
        let mut hook = |a: At, v: &Value| (debug)(&script.pos(at.at(a)), v);
        let mut env = Env {
            vars: &self.vars,
            names: &script.vars.names,
            rng: &mut self.rng,
            debug: &mut hook,
        };
        expr::eval(e, &mut env).map_err(|err| Failure::Script {
            at: script.pos(at.at(err.at)),
            message: err.message,
        })
    }

    fn exec_block<E: Executor>(
        &mut self,
        block: &'s Block,
        exec: &mut E,
    ) -> Result<Done, Failure<E::Error>> {
        let cmds = &block.cmds;
        let mut pc = 0;
        let mut statements = 0;
        while let Some(cmd) = cmds.get(pc) {
            pc += 1;
            match cmd {
                Cmd::Sql(sql) => {
                    if sql.only.is_some() {
                        continue;
                    }
                    self.sql(sql, exec)?;
                    statements += 1;
                }
                Cmd::Set { at, slot, expr } => {
                    let v = self.eval(expr, *at).map_err(retype)?;
                    self.vars[*slot as usize] = Some(Var::Val(v));
                }
                Cmd::If { at, cond, else_to } => {
                    if !expr::truthy(&self.eval(cond, *at).map_err(retype)?) {
                        pc = *else_to;
                    }
                }
                Cmd::Jump(to) => pc = *to,
                Cmd::Sleep { at, amount, unit } => {
                    let n = match amount {
                        Amount::Lit(n) => *n,
                        Amount::Var(slot, a) => self.int_var(*slot, at.at(*a))?,
                    };
                    let us = (n.max(0) as u64).saturating_mul(*unit);
                    if !exec.sleep(Duration::from_micros(us)) {
                        return Err(Failure::Stopped);
                    }
                }
            }
        }
        Ok(Done { statements })
    }

    fn int_var<E>(&self, slot: u32, at: CPos) -> Result<i64, Failure<E>> {
        let script = self.script;
        let name = &script.vars.names[slot as usize];
        let v = match &self.vars[slot as usize] {
            None => None,
            Some(Var::Val(Value::Text(s))) | Some(Var::Raw(s)) => expr::text_value(s),
            Some(Var::Val(v)) => Some(v.clone()),
        };
        match v {
            Some(Value::Int(i)) => Ok(i),
            None if self.vars[slot as usize].is_none() => Err(Failure::Script {
                at: script.pos(at),
                message: format!("\\sleep: undefined variable :{name}"),
            }),
            _ => Err(Failure::Script {
                at: script.pos(at),
                message: format!("\\sleep: variable :{name} is not an integer"),
            }),
        }
    }

    fn sql<E: Executor>(&mut self, sql: &'s Sql, exec: &mut E) -> Result<(), Failure<E::Error>> {
        let script = self.script;
        self.buf.clear();
        self.buf.reserve(sql.len);
        for p in &sql.pieces {
            match p {
                Piece::Lit(s) => self.buf.push_str(s),
                Piece::Var(slot, at) => match &self.vars[*slot as usize] {
                    None => {
                        self.buf.push(':');
                        self.buf.push_str(&script.vars.names[*slot as usize]);
                    }
                    Some(Var::Raw(s)) => self.buf.push_str(s),
                    Some(Var::Val(Value::Text(s))) => {
                        let lit = exec.text_literal(s);
                        self.buf.push_str(&lit);
                    }
                    Some(Var::Val(v)) => {
                        if load::push_value(&mut self.buf, v).is_none() {
                            return Err(Failure::Script {
                                at: script.pos(sql.at.at(*at)),
                                message: format!(
                                    "variable :{} is {v}: not a number SQL can take (expected a finite double)",
                                    script.vars.names[*slot as usize]
                                ),
                            });
                        }
                    }
                },
            }
        }
        let rows = exec.query(&self.buf).map_err(|error| Failure::Sql {
            at: script.pos(sql.at),
            sql: truncate_chars(&self.buf, 200),
            error,
        })?;
        if let Some(g) = &sql.gset {
            self.store(g, rows, exec)?;
        }
        Ok(())
    }

    fn store<E: Executor>(
        &mut self,
        g: &Gset,
        rows: Vec<Vec<Value>>,
        exec: &E,
    ) -> Result<(), Failure<E::Error>> {
        let script = self.script;
        let what = if g.all { "\\aset" } else { "\\gset" };
        if !g.all && rows.len() != 1 {
            return Err(Failure::Script {
                at: script.pos(g.at),
                message: format!("\\gset expected one row, got {}", rows.len()),
            });
        }
        if rows.is_empty() {
            return Ok(());
        }
        let columns = exec.columns();
        for row in rows {
            if columns.len() < row.len() {
                return Err(Failure::Script {
                    at: script.pos(g.at),
                    message: format!(
                        "{what} needs the result's column names: the executor gave {} for {} columns",
                        columns.len(),
                        row.len()
                    ),
                });
            }
            for (name, v) in columns.iter().zip(row) {
                self.name_buf.clear();
                self.name_buf.push_str(&g.prefix);
                self.name_buf.push_str(name);
                // A name no command reads is not kept (nothing could read it).
                if let Some(&slot) = script.vars.index.get(self.name_buf.as_str()) {
                    self.vars[slot as usize] = Some(Var::Val(v));
                }
            }
        }
        Ok(())
    }
}

/// A script failure (which holds no executor error) as any executor's failure.
fn retype<E>(f: Failure<std::convert::Infallible>) -> Failure<E> {
    match f {
        Failure::Script { at, message } => Failure::Script { at, message },
        Failure::Stopped => Failure::Stopped,
        Failure::Sql { error, .. } => match error {},
    }
}
