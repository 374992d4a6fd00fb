//! Reading one source's text into commands: SQL split at `;` (outside quotes and comments),
//! pre-split into literal pieces and variable slots; meta-commands; sections.

use super::expr::{self, At, Expr, PChar};
use super::{ScriptError, Value};

/// A place in a script: the file's index in the script's file table, line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CPos {
    pub file: u32,
    pub line: u32,
    pub col: u32,
}

impl CPos {
    pub(crate) fn at(self, at: At) -> CPos {
        CPos {
            file: self.file,
            line: at.line,
            col: at.col,
        }
    }
}

/// A piece of an SQL command's text.
#[derive(Clone, Debug)]
pub(crate) enum Piece {
    Lit(String),
    /// `:name` (kept as written when the variable is not set).
    Var(u32, At),
}

/// `\gset` / `\aset` after a query.
#[derive(Clone, Debug)]
pub(crate) struct Gset {
    pub all: bool,
    pub prefix: String,
    pub at: CPos,
}

/// Dialect bits of `\only`.
pub(crate) const SQLITE: u8 = 1;
pub(crate) const POSTGRES: u8 = 2;
pub(crate) const MYSQL: u8 = 4;
pub(crate) const SQLSERVER: u8 = 8;

/// The dialect bit of a dialect name (and its aliases).
pub(crate) fn dialect_bit(name: &str) -> Option<u8> {
    match name.to_ascii_lowercase().as_str() {
        "sqlite" => Some(SQLITE),
        "postgres" | "postgresql" | "pg" => Some(POSTGRES),
        "mysql" | "mariadb" => Some(MYSQL),
        "sqlserver" | "mssql" => Some(SQLSERVER),
        _ => None,
    }
}

/// The dialect names `\only` and `for_dialect` accept.
pub(crate) const DIALECT_NAMES: &str =
    "sqlite, postgres (postgresql, pg), mysql (mariadb), sqlserver (mssql)";

/// One SQL command.
#[derive(Clone, Debug)]
pub(crate) struct Sql {
    pub at: CPos,
    pub pieces: Vec<Piece>,
    /// `\only`: the dialects it is kept for.
    pub only: Option<u8>,
    pub gset: Option<Gset>,
    /// The literal text's length (the substituted text's capacity hint).
    pub len: usize,
}

/// `\sleep`'s amount.
#[derive(Clone, Debug)]
pub(crate) enum Amount {
    Lit(i64),
    Var(u32, At),
}

/// One command, compiled: conditionals are jumps.
#[derive(Clone, Debug)]
pub(crate) enum Cmd {
    Sql(Sql),
    Set {
        at: CPos,
        slot: u32,
        expr: Expr,
    },
    Sleep {
        at: CPos,
        amount: Amount,
        /// Microseconds per unit.
        unit: u64,
    },
    /// Evaluates the condition; when false, continues at `else_to`.
    If {
        at: CPos,
        cond: Expr,
        else_to: usize,
    },
    Jump(usize),
}

/// The commands of one section.
#[derive(Clone, Debug, Default)]
pub(crate) struct Block {
    pub cmds: Vec<Cmd>,
}

impl Block {
    /// How many SQL commands it holds.
    pub(crate) fn statements(&self) -> u32 {
        self.cmds
            .iter()
            .filter(|c| matches!(c, Cmd::Sql(_)))
            .count() as u32
    }

    /// The block with the SQL commands `keep` refuses removed, jumps renumbered.
    pub(crate) fn filtered(&self, keep: impl Fn(&Sql) -> bool) -> Block {
        let n = self.cmds.len();
        let kept: Vec<bool> = self
            .cmds
            .iter()
            .map(|c| !matches!(c, Cmd::Sql(s) if !keep(s)))
            .collect();
        // new_index[i]: where command i (or the first kept one after it) lands.
        let mut new_index = vec![0usize; n + 1];
        let mut next = 0;
        for i in 0..n {
            new_index[i] = next;
            if kept[i] {
                next += 1;
            }
        }
        new_index[n] = next;
        let cmds = self
            .cmds
            .iter()
            .zip(&kept)
            .filter(|(_, k)| **k)
            .map(|(c, _)| match c {
                Cmd::If { at, cond, else_to } => Cmd::If {
                    at: *at,
                    cond: cond.clone(),
                    else_to: new_index[*else_to],
                },
                Cmd::Jump(to) => Cmd::Jump(new_index[*to]),
                Cmd::Sql(s) => Cmd::Sql(Sql {
                    only: None,
                    ..s.clone()
                }),
                other => other.clone(),
            })
            .collect();
        Block { cmds }
    }
}

/// A `\transaction` section (or a file's implicit one).
#[derive(Clone, Debug)]
pub(crate) struct LTxn {
    pub name: String,
    pub weight: Option<u32>,
    pub at: CPos,
    pub block: Block,
}

/// What one source holds.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    pub setup: Option<Block>,
    pub teardown: Option<Block>,
    pub txns: Vec<LTxn>,
    /// Whether the file has `\transaction` sections (else its one transaction is implicit).
    pub sectioned: bool,
}

/// Interns variable names into slots.
pub(crate) trait Interner {
    fn intern(&mut self, name: &str) -> u32;
    fn default_seed(&self) -> u32;
}

/// Whether `c` may be part of a variable name.
pub(crate) fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || !c.is_ascii()
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// Builds a [`ScriptError`] for a place of `text` (the line shown under the message).
pub(crate) fn error_at(
    file: &str,
    text: &str,
    line: u32,
    col: u32,
    message: String,
) -> ScriptError {
    let shown = text
        .split('\n')
        .nth(line.saturating_sub(1) as usize)
        .map(|l| l.trim_end_matches('\r').to_string());
    ScriptError::new(file, line, col, message, shown)
}

const KNOWN: &str = "\\set, \\sleep, \\gset, \\aset, \\if, \\elif, \\else, \\endif, \\startpipeline, \\syncpipeline, \\endpipeline, \\transaction, \\setup, \\teardown, \\only";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Section {
    Implicit,
    Setup,
    Teardown,
    Txn,
}

struct IfFrame {
    at: At,
    pending: Option<usize>,
    end_jumps: Vec<usize>,
    seen_else: bool,
}

struct SqlAcc {
    start: At,
    pieces: Vec<Piece>,
    lit: String,
    seg: usize,
}

struct Loader<'a> {
    file: u32,
    name: &'a str,
    s: &'a str,
    b: &'a [u8],
    i: usize,
    line: u32,
    col: u32,
    vars: &'a mut dyn Interner,
    out: Loaded,
    section: Section,
    section_at: At,
    block: Block,
    implicit: Block,
    implicit_at: Option<At>,
    txn_name: String,
    txn_weight: Option<u32>,
    ifs: Vec<IfFrame>,
    pipeline: Option<At>,
    only: Option<(u8, At)>,
    last_sql: bool,
    has_txn_sections: bool,
    any_command: bool,
}

/// Reads one source's text. `stem` names the implicit transaction.
pub(crate) fn load(
    file: u32,
    name: &str,
    text: &str,
    stem: &str,
    vars: &mut dyn Interner,
) -> Result<Loaded, ScriptError> {
    let mut l = Loader {
        file,
        name,
        s: text,
        b: text.as_bytes(),
        i: 0,
        line: 1,
        col: 1,
        vars,
        out: Loaded::default(),
        section: Section::Implicit,
        section_at: At { line: 1, col: 1 },
        block: Block::default(),
        implicit: Block::default(),
        implicit_at: None,
        txn_name: String::new(),
        txn_weight: None,
        ifs: Vec::new(),
        pipeline: None,
        only: None,
        last_sql: false,
        has_txn_sections: false,
        any_command: false,
    };
    l.run()?;
    l.close_section()?;
    l.out.sectioned = l.has_txn_sections;
    if !l.any_command {
        return Err(l.err(
            At { line: 1, col: 1 },
            "empty script: no SQL command or meta-command (expected SQL commands ended by ';')"
                .into(),
        ));
    }
    if !l.implicit.cmds.is_empty() {
        if l.has_txn_sections {
            let at = l.implicit_at.unwrap_or(At { line: 1, col: 1 });
            return Err(l.err(at, "this command is outside any section, in a file with \\transaction sections: expected \\transaction, \\setup or \\teardown before it".into()));
        }
        let block = std::mem::take(&mut l.implicit);
        l.out.txns.push(LTxn {
            name: stem.to_string(),
            weight: None,
            at: CPos {
                file,
                line: 1,
                col: 1,
            },
            block,
        });
    }
    Ok(l.out)
}

impl Loader<'_> {
    fn err(&self, at: At, message: String) -> ScriptError {
        error_at(self.name, self.s, at.line, at.col, message)
    }

    fn here(&self) -> At {
        At {
            line: self.line,
            col: self.col,
        }
    }

    fn cpos(&self, at: At) -> CPos {
        CPos {
            file: self.file,
            line: at.line,
            col: at.col,
        }
    }

    fn adv(&mut self) {
        let c = self.b[self.i];
        self.i += 1;
        if c == b'\n' {
            self.line += 1;
            self.col = 1;
        } else if c & 0xC0 != 0x80 {
            self.col += 1;
        }
    }

    fn peek(&self, k: usize) -> Option<u8> {
        self.b.get(self.i + k).copied()
    }

    fn start(&mut self, cmd: &mut Option<SqlAcc>) {
        if cmd.is_none() {
            *cmd = Some(SqlAcc {
                start: self.here(),
                pieces: Vec::new(),
                lit: String::new(),
                seg: self.i,
            });
        }
    }

    fn flush(&self, cmd: &mut Option<SqlAcc>) {
        if let Some(c) = cmd {
            c.lit.push_str(&self.s[c.seg..self.i]);
            c.seg = self.i;
        }
    }

    fn run(&mut self) -> Result<(), ScriptError> {
        let mut cmd: Option<SqlAcc> = None;
        while self.i < self.b.len() {
            let c = self.b[self.i];
            let here = self.here();
            match c {
                b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c => self.adv(),
                0 => {
                    return Err(self.err(
                        here,
                        "a NUL byte: a script is text (expected SQL or a meta-command)".into(),
                    ))
                }
                b'-' if self.peek(1) == Some(b'-') => {
                    self.flush(&mut cmd);
                    while self.i < self.b.len() && self.b[self.i] != b'\n' {
                        self.adv();
                    }
                    if let Some(c) = &mut cmd {
                        c.seg = self.i;
                    }
                }
                // Kept in the command's text (MySQL's optimizer hints are comments).
                b'/' if self.peek(1) == Some(b'*') => self.block_comment(here)?,
                b'\'' | b'"' | b'`' => {
                    self.start(&mut cmd);
                    let escapes = c == b'\''
                        && self.i > 0
                        && matches!(self.b[self.i - 1], b'e' | b'E')
                        && (self.i < 2 || !is_name_byte(self.b[self.i - 2]));
                    self.quoted(c, escapes, here)?;
                }
                b'$' => {
                    self.start(&mut cmd);
                    self.dollar(here)?;
                }
                b':' => {
                    self.start(&mut cmd);
                    if self.peek(1) == Some(b':') {
                        self.adv();
                        self.adv();
                    } else if self.peek(1).is_some_and(is_name_byte) {
                        self.flush(&mut cmd);
                        self.adv();
                        let from = self.i;
                        while self.i < self.b.len() && is_name_byte(self.b[self.i]) {
                            self.adv();
                        }
                        let slot = self.vars.intern(&self.s[from..self.i]);
                        let acc = cmd.as_mut().expect("started");
                        if !acc.lit.is_empty() {
                            acc.pieces.push(Piece::Lit(std::mem::take(&mut acc.lit)));
                        }
                        acc.pieces.push(Piece::Var(slot, here));
                        acc.seg = self.i;
                    } else {
                        self.adv();
                    }
                }
                b';' => {
                    self.flush(&mut cmd);
                    self.adv();
                    if let Some(acc) = cmd.take() {
                        self.finish_sql(acc)?;
                    }
                }
                b'\\' if self.peek(1) == Some(b';') => {
                    self.start(&mut cmd);
                    self.flush(&mut cmd);
                    self.adv();
                    self.adv();
                    if let Some(acc) = &mut cmd {
                        acc.lit.push(';');
                        acc.seg = self.i;
                    }
                }
                b'\\' => {
                    self.flush(&mut cmd);
                    if let Some(acc) = cmd.take() {
                        self.finish_sql(acc)?;
                    }
                    self.meta(here)?;
                }
                _ => {
                    self.start(&mut cmd);
                    self.adv();
                }
            }
        }
        self.flush(&mut cmd);
        if let Some(acc) = cmd.take() {
            self.finish_sql(acc)?;
        }
        Ok(())
    }

    fn block_comment(&mut self, here: At) -> Result<(), ScriptError> {
        self.adv();
        self.adv();
        let mut depth = 1u32;
        while self.i < self.b.len() {
            if self.b[self.i] == b'*' && self.peek(1) == Some(b'/') {
                self.adv();
                self.adv();
                depth -= 1;
                if depth == 0 {
                    return Ok(());
                }
            } else if self.b[self.i] == b'/' && self.peek(1) == Some(b'*') {
                self.adv();
                self.adv();
                depth += 1;
            } else if self.b[self.i] == 0 {
                return Err(self.err(self.here(), "a NUL byte: a script is text".into()));
            } else {
                self.adv();
            }
        }
        Err(self.err(
            here,
            "unterminated /* comment: expected */ before the end of the file".into(),
        ))
    }

    fn quoted(&mut self, q: u8, escapes: bool, here: At) -> Result<(), ScriptError> {
        self.adv();
        while self.i < self.b.len() {
            let c = self.b[self.i];
            if c == 0 {
                return Err(self.err(self.here(), "a NUL byte: a script is text".into()));
            }
            if escapes && c == b'\\' && self.i + 1 < self.b.len() {
                self.adv();
                self.adv();
                continue;
            }
            self.adv();
            if c == q {
                if self.peek(0) == Some(q) {
                    self.adv();
                    continue;
                }
                return Ok(());
            }
        }
        let what = match q {
            b'\'' => "quoted string",
            b'"' => "quoted identifier",
            _ => "`quoted` identifier",
        };
        Err(self.err(
            here,
            format!(
                "unterminated {what}: expected its closing {} before the end of the file",
                q as char
            ),
        ))
    }

    fn dollar(&mut self, here: At) -> Result<(), ScriptError> {
        let prev_is_name =
            self.i > 0 && (is_name_byte(self.b[self.i - 1]) || self.b[self.i - 1] == b'$');
        let mut j = self.i + 1;
        if !prev_is_name && !self.b.get(j).is_some_and(|b| b.is_ascii_digit()) {
            while j < self.b.len() && is_name_byte(self.b[j]) {
                j += 1;
            }
            if self.b.get(j) == Some(&b'$') {
                let tag = &self.s[self.i..=j];
                let body = j + 1;
                while self.i < body {
                    self.adv();
                }
                match self.s[body..].find(tag) {
                    Some(k) => {
                        let end = body + k + tag.len();
                        if let Some(z) = self.b[body..end].iter().position(|&b| b == 0) {
                            while self.i < body + z {
                                self.adv();
                            }
                            return Err(self.err(self.here(), "a NUL byte: a script is text".into()));
                        }
                        while self.i < end {
                            self.adv();
                        }
                        return Ok(());
                    }
                    None => {
                        return Err(self.err(
                            here,
                            format!("unterminated dollar-quoted string: expected its closing {tag} before the end of the file"),
                        ))
                    }
                }
            }
        }
        self.adv();
        Ok(())
    }

    fn finish_sql(&mut self, mut acc: SqlAcc) -> Result<(), ScriptError> {
        let trimmed = acc.lit.trim_end().len();
        acc.lit.truncate(trimmed);
        if !acc.lit.is_empty() {
            acc.pieces.push(Piece::Lit(acc.lit));
        }
        let blank = acc.pieces.iter().all(|p| match p {
            Piece::Lit(s) => s
                .trim_matches(|c: char| c.is_whitespace() || c == ';')
                .is_empty(),
            Piece::Var(..) => false,
        });
        if blank {
            return Ok(());
        }
        let len = acc
            .pieces
            .iter()
            .map(|p| match p {
                Piece::Lit(s) => s.len(),
                Piece::Var(..) => 8,
            })
            .sum();
        let only = self.only.take().map(|(m, _)| m);
        let at = self.cpos(acc.start);
        self.push(
            Cmd::Sql(Sql {
                at,
                pieces: acc.pieces,
                only,
                gset: None,
                len,
            }),
            acc.start,
        );
        self.last_sql = true;
        Ok(())
    }

    fn push(&mut self, cmd: Cmd, at: At) {
        self.any_command = true;
        if self.section == Section::Implicit {
            if self.implicit_at.is_none() {
                self.implicit_at = Some(at);
            }
            self.implicit.cmds.push(cmd);
        } else {
            self.block.cmds.push(cmd);
        }
    }

    fn cmds(&mut self) -> &mut Vec<Cmd> {
        if self.section == Section::Implicit {
            &mut self.implicit.cmds
        } else {
            &mut self.block.cmds
        }
    }

    /// Reads a meta-command's characters (after the backslash) to the end of its line,
    /// joining lines ended by a backslash.
    fn meta_chars(&mut self) -> Result<Vec<PChar>, ScriptError> {
        self.adv(); // the backslash
        let mut out = Vec::new();
        while self.i < self.b.len() {
            let c = self.b[self.i];
            if c == b'\n' {
                break;
            }
            if c == b'\\'
                && (self.peek(1) == Some(b'\n')
                    || (self.peek(1) == Some(b'\r') && self.peek(2) == Some(b'\n')))
            {
                while self.b[self.i] != b'\n' {
                    self.adv();
                }
                self.adv();
                out.push(PChar {
                    c: ' ',
                    line: self.line,
                    col: self.col,
                });
                continue;
            }
            if c == 0 {
                return Err(self.err(self.here(), "a NUL byte: a script is text".into()));
            }
            let ch = self.s[self.i..].chars().next().expect("inside the text");
            out.push(PChar {
                c: ch,
                line: self.line,
                col: self.col,
            });
            for _ in 0..ch.len_utf8() {
                self.adv();
            }
        }
        Ok(out)
    }

    /// One meta-command: its line read and split, then handed to the command it names.
    fn meta(&mut self, at: At) -> Result<(), ScriptError> {
        let m = self.meta_line(at)?;
        if let Some((_, only_at)) = self.only {
            return Err(self.err(
                at,
                format!("\\only (at line {}) applies to the SQL command right after it: expected an SQL command, not \\{}", only_at.line, m.name),
            ));
        }
        let was_sql = std::mem::replace(&mut self.last_sql, false);
        match m.lname.as_str() {
            "set" => self.meta_set(&m),
            "sleep" => self.meta_sleep(&m),
            "gset" | "aset" => self.meta_gset(&m, was_sql),
            "if" => self.meta_if(&m),
            "elif" => self.meta_elif(&m),
            "else" => self.meta_else(&m),
            "endif" => self.meta_endif(&m),
            "startpipeline" | "syncpipeline" | "endpipeline" => self.meta_pipeline(&m),
            "shell" | "setshell" => Err(self.err(at, format!("\\{} is refused: oio runs no shell commands from a script (use \\set, or \\gset from a query, to compute values)", m.lname))),
            "transaction" => self.meta_transaction(&m),
            "setup" | "teardown" => self.meta_section(&m),
            "only" => self.meta_only(&m),
            _ => Err(self.err(
                at,
                format!("unknown meta-command \\{}: expected one of {KNOWN}", m.name),
            )),
        }
    }

    /// Reads the meta-command at `at` to the end of its line and splits it into its name and
    /// its words.
    fn meta_line(&mut self, at: At) -> Result<MetaLine, ScriptError> {
        let chars = self.meta_chars()?;
        let end = chars
            .last()
            .map(|p| At {
                line: p.line,
                col: p.col + 1,
            })
            .unwrap_or(At {
                line: at.line,
                col: at.col + 1,
            });
        let name_len = chars.iter().take_while(|p| !p.c.is_whitespace()).count();
        let name: String = chars[..name_len].iter().map(|p| p.c).collect();
        let lname = name.to_ascii_lowercase();
        let rest = chars[name_len..].to_vec();
        let words = split_words(&rest);
        Ok(MetaLine {
            at,
            end,
            name,
            lname,
            rest,
            words,
        })
    }

    /// An error unless the meta-command has no argument.
    fn no_args(&self, m: &MetaLine) -> Result<(), ScriptError> {
        match m.words.first() {
            Some((_, w_at)) => Err(self.err(
                *w_at,
                format!(
                    "\\{} takes no argument: expected the end of the line",
                    m.lname
                ),
            )),
            None => Ok(()),
        }
    }

    /// `\set NAME EXPRESSION`.
    fn meta_set(&mut self, m: &MetaLine) -> Result<(), ScriptError> {
        let Some((var, var_at)) = m.words.first() else {
            return Err(self.err(
                m.end,
                "\\set: expected a variable name and an expression".into(),
            ));
        };
        if !var.chars().all(is_name_char) {
            return Err(self.err(
                *var_at,
                format!("\\set: invalid variable name '{var}': expected letters, digits and '_'"),
            ));
        }
        let skip = m
            .rest
            .iter()
            .position(|p| p.line == var_at.line && p.col == var_at.col)
            .unwrap_or(0)
            + var.chars().count();
        let etext = &m.rest[skip..];
        if etext.iter().all(|p| p.c.is_whitespace()) {
            return Err(self.err(
                m.end,
                format!("\\set {var}: expected an expression after the variable name"),
            ));
        }
        let slot = self.vars.intern(var);
        let expr = self.expr(etext, m.end)?;
        let c = Cmd::Set {
            at: self.cpos(m.at),
            slot,
            expr,
        };
        self.push(c, m.at);
        Ok(())
    }

    /// `\sleep AMOUNT [us|ms|s]`.
    fn meta_sleep(&mut self, m: &MetaLine) -> Result<(), ScriptError> {
        let Some((amount, a_at)) = m.words.first() else {
            return Err(self.err(m.end, "\\sleep: expected a duration (an integer or a :variable) and an optional unit (us, ms or s)".into()));
        };
        let amount = if let Some(v) = amount.strip_prefix(':') {
            if v.is_empty() || !v.chars().all(is_name_char) {
                return Err(self.err(*a_at, format!("\\sleep: invalid variable '{amount}'")));
            }
            Amount::Var(self.vars.intern(v), *a_at)
        } else {
            match amount.parse::<i64>() {
                Ok(n) if n >= 0 => Amount::Lit(n),
                _ => return Err(self.err(*a_at, format!("\\sleep: invalid duration '{amount}': expected a non-negative integer or a :variable"))),
            }
        };
        let unit = match m.words.get(1) {
            None => 1_000_000,
            Some((u, u_at)) => match u.to_ascii_lowercase().as_str() {
                "us" => 1,
                "ms" => 1_000,
                "s" => 1_000_000,
                _ => {
                    return Err(self.err(
                        *u_at,
                        format!("\\sleep: unknown time unit '{u}': expected us, ms or s"),
                    ))
                }
            },
        };
        if let Some((_, x_at)) = m.words.get(2) {
            return Err(self.err(
                *x_at,
                "\\sleep: too many arguments: expected a duration and an optional unit".into(),
            ));
        }
        let c = Cmd::Sleep {
            at: self.cpos(m.at),
            amount,
            unit,
        };
        self.push(c, m.at);
        Ok(())
    }

    /// `\gset [PREFIX]` or `\aset [PREFIX]`, right after the SQL command whose result it
    /// stores.
    fn meta_gset(&mut self, m: &MetaLine, was_sql: bool) -> Result<(), ScriptError> {
        let (at, lname) = (m.at, m.lname.as_str());
        if let Some((_, x_at)) = m.words.get(1) {
            return Err(self.err(
                *x_at,
                format!("\\{lname}: too many arguments: expected an optional variable prefix"),
            ));
        }
        let prefix = m.words.first().map(|(w, _)| w.clone()).unwrap_or_default();
        let gat = self.cpos(at);
        let target = if was_sql {
            self.cmds().last_mut()
        } else {
            None
        };
        match target {
            Some(Cmd::Sql(sql)) if sql.gset.is_none() => {
                sql.gset = Some(Gset { all: lname == "aset", prefix, at: gat });
            }
            Some(Cmd::Sql(_)) => {
                return Err(self.err(at, format!("\\{lname}: this SQL command already stores its result (one \\gset or \\aset per command)")))
            }
            _ => {
                return Err(self.err(at, format!("\\{lname} must follow an SQL command: expected a query before it (whose result it stores)")))
            }
        }
        self.last_sql = true;
        Ok(())
    }

    /// `\if CONDITION`.
    fn meta_if(&mut self, m: &MetaLine) -> Result<(), ScriptError> {
        let cond = self.cond(&m.rest, m.end, m.at, "if")?;
        let idx = self.cmds().len();
        let c = Cmd::If {
            at: self.cpos(m.at),
            cond,
            else_to: usize::MAX,
        };
        self.push(c, m.at);
        self.ifs.push(IfFrame {
            at: m.at,
            pending: Some(idx),
            end_jumps: Vec::new(),
            seen_else: false,
        });
        Ok(())
    }

    /// `\elif CONDITION`: the branch before it jumps to the end; the pending `\if` or
    /// `\elif` that fails jumps here.
    fn meta_elif(&mut self, m: &MetaLine) -> Result<(), ScriptError> {
        let at = m.at;
        self.check_frame(at, "elif")?;
        let cond = self.cond(&m.rest, m.end, at, "elif")?;
        let jump = self.cmds().len();
        self.push(Cmd::Jump(usize::MAX), at);
        let idx = self.cmds().len();
        let frame = self.ifs.last_mut().expect("checked");
        frame.end_jumps.push(jump);
        let pending = frame.pending.replace(idx);
        let c = Cmd::If {
            at: self.cpos(at),
            cond,
            else_to: usize::MAX,
        };
        self.push(c, at);
        if let Some(p) = pending {
            self.patch(p, idx);
        }
        Ok(())
    }

    /// `\else`.
    fn meta_else(&mut self, m: &MetaLine) -> Result<(), ScriptError> {
        self.no_args(m)?;
        self.check_frame(m.at, "else")?;
        let jump = self.cmds().len();
        self.push(Cmd::Jump(usize::MAX), m.at);
        let here = self.cmds().len();
        let frame = self.ifs.last_mut().expect("checked");
        frame.end_jumps.push(jump);
        frame.seen_else = true;
        if let Some(p) = frame.pending.take() {
            self.patch(p, here);
        }
        Ok(())
    }

    /// `\endif`: every jump of its frame lands here.
    fn meta_endif(&mut self, m: &MetaLine) -> Result<(), ScriptError> {
        self.no_args(m)?;
        let Some(frame) = self.ifs.pop() else {
            return Err(self.err(
                m.at,
                "\\endif without \\if: expected an \\if before it".into(),
            ));
        };
        let here = self.cmds().len();
        if let Some(p) = frame.pending {
            self.patch(p, here);
        }
        for j in frame.end_jumps {
            self.patch(j, here);
        }
        Ok(())
    }

    /// `\startpipeline`, `\syncpipeline` and `\endpipeline`: checked for their nesting; the
    /// statements between them run as they would outside.
    fn meta_pipeline(&mut self, m: &MetaLine) -> Result<(), ScriptError> {
        self.no_args(m)?;
        let (at, lname) = (m.at, m.lname.as_str());
        if lname == "startpipeline" {
            if let Some(p) = self.pipeline {
                return Err(self.err(at, format!("\\startpipeline inside a pipeline (started at line {}): expected \\endpipeline first", p.line)));
            }
            self.pipeline = Some(at);
            return Ok(());
        }
        if self.pipeline.is_none() {
            return Err(self.err(
                at,
                format!("\\{lname} outside a pipeline: expected \\startpipeline before it"),
            ));
        }
        if lname == "endpipeline" {
            self.pipeline = None;
        }
        Ok(())
    }

    /// `\transaction NAME [WEIGHT]`: a new section.
    fn meta_transaction(&mut self, m: &MetaLine) -> Result<(), ScriptError> {
        let Some((tname, _)) = m.words.first() else {
            return Err(self.err(
                m.end,
                "\\transaction: expected a name (and an optional weight)".into(),
            ));
        };
        let weight = match m.words.get(1) {
            None => None,
            Some((w, w_at)) => match w.parse::<u32>() {
                Ok(w) => Some(w),
                Err(_) => return Err(self.err(*w_at, format!("\\transaction {tname}: invalid weight '{w}': expected a whole number from 0 to {}", u32::MAX))),
            },
        };
        if let Some((_, x_at)) = m.words.get(2) {
            return Err(self.err(
                *x_at,
                "\\transaction: too many arguments: expected a name and an optional weight".into(),
            ));
        }
        let tname = tname.clone();
        self.close_section()?;
        self.section = Section::Txn;
        self.section_at = m.at;
        self.txn_name = tname;
        self.txn_weight = weight;
        self.has_txn_sections = true;
        Ok(())
    }

    /// `\setup` or `\teardown`: a new section, once per file.
    fn meta_section(&mut self, m: &MetaLine) -> Result<(), ScriptError> {
        self.no_args(m)?;
        self.close_section()?;
        let lname = m.lname.as_str();
        let (sec, existing) = if lname == "setup" {
            (Section::Setup, self.out.setup.is_some())
        } else {
            (Section::Teardown, self.out.teardown.is_some())
        };
        if existing {
            return Err(self.err(
                m.at,
                format!("a second \\{lname} section in this file: expected one"),
            ));
        }
        self.section = sec;
        self.section_at = m.at;
        Ok(())
    }

    /// `\only DIALECT[,DIALECT…]`: the next SQL command runs only on those dialects.
    fn meta_only(&mut self, m: &MetaLine) -> Result<(), ScriptError> {
        if m.words.is_empty() {
            return Err(self.err(
                m.end,
                format!("\\only: expected dialect names separated by commas ({DIALECT_NAMES})"),
            ));
        }
        let mut mask = 0u8;
        for (w, w_at) in &m.words {
            let mut col = w_at.col;
            for part in w.split(',') {
                if !part.is_empty() {
                    match dialect_bit(part) {
                        Some(b) => mask |= b,
                        None => {
                            return Err(self.err(
                                At {
                                    line: w_at.line,
                                    col,
                                },
                                format!(
                                    "\\only: unknown dialect '{part}': expected {DIALECT_NAMES}"
                                ),
                            ))
                        }
                    }
                }
                col += part.chars().count() as u32 + 1;
            }
        }
        if mask == 0 {
            return Err(self.err(
                m.end,
                format!("\\only: expected dialect names ({DIALECT_NAMES})"),
            ));
        }
        self.only = Some((mask, m.at));
        Ok(())
    }

    fn check_frame(&self, at: At, what: &str) -> Result<(), ScriptError> {
        match self.ifs.last() {
            None => Err(self.err(
                at,
                format!("\\{what} without \\if: expected an \\if before it"),
            )),
            Some(f) if f.seen_else => Err(self.err(
                at,
                format!(
                    "\\{what} after \\else (line {}): expected \\endif",
                    f.at.line
                ),
            )),
            Some(_) => Ok(()),
        }
    }

    fn patch(&mut self, idx: usize, to: usize) {
        match &mut self.cmds()[idx] {
            Cmd::If { else_to, .. } => *else_to = to,
            Cmd::Jump(t) => *t = to,
            _ => unreachable!("only conditionals are patched"),
        }
    }

    fn cond(&mut self, rest: &[PChar], end: At, at: At, what: &str) -> Result<Expr, ScriptError> {
        if rest.iter().all(|p| p.c.is_whitespace()) {
            return Err(self.err(
                if rest.is_empty() {
                    At {
                        line: at.line,
                        col: at.col + what.len() as u32 + 1,
                    }
                } else {
                    end
                },
                format!("\\{what}: expected a condition (an expression)"),
            ));
        }
        self.expr(rest, end)
    }

    fn expr(&mut self, text: &[PChar], end: At) -> Result<Expr, ScriptError> {
        let seed = self.vars.default_seed();
        let vars = &mut *self.vars;
        let mut intern = |n: &str| vars.intern(n);
        expr::parse(text, end, &mut intern, seed).map_err(|e| self.err(e.at, e.message))
    }

    /// Ends the current section (checks what must be closed in it).
    fn close_section(&mut self) -> Result<(), ScriptError> {
        if let Some(f) = self.ifs.first() {
            return Err(self.err(
                f.at,
                "\\if without \\endif: expected \\endif before the end of its section".into(),
            ));
        }
        if let Some(p) = self.pipeline {
            return Err(self.err(p, "\\startpipeline without \\endpipeline: expected \\endpipeline before the end of its section".into()));
        }
        if let Some((_, at)) = self.only {
            return Err(self.err(at, "\\only applies to the SQL command right after it: expected an SQL command before the end of its section".into()));
        }
        self.last_sql = false;
        let block = std::mem::take(&mut self.block);
        let at = self.section_at;
        match self.section {
            Section::Implicit => return Ok(()),
            Section::Setup | Section::Teardown if block.cmds.is_empty() => {
                let what = if self.section == Section::Setup {
                    "setup"
                } else {
                    "teardown"
                };
                return Err(self.err(
                    at,
                    format!("the \\{what} section has no commands: expected SQL commands after it"),
                ));
            }
            Section::Setup => self.out.setup = Some(block),
            Section::Teardown => self.out.teardown = Some(block),
            Section::Txn => {
                if block.cmds.is_empty() {
                    return Err(self.err(at, format!("transaction '{}' has no commands: expected SQL commands after \\transaction", self.txn_name)));
                }
                let c = self.cpos(at);
                self.out.txns.push(LTxn {
                    name: std::mem::take(&mut self.txn_name),
                    weight: self.txn_weight,
                    at: c,
                    block,
                });
            }
        }
        self.section = Section::Implicit;
        Ok(())
    }
}

/// Whitespace-separated words with the place of each.
/// A meta-command's line: where it starts and ends, its name as written and in lower case,
/// the characters after the name and their words.
struct MetaLine {
    at: At,
    end: At,
    name: String,
    lname: String,
    rest: Vec<PChar>,
    words: Vec<(String, At)>,
}

fn split_words(chars: &[PChar]) -> Vec<(String, At)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].c.is_whitespace() {
            i += 1;
            continue;
        }
        let at = At {
            line: chars[i].line,
            col: chars[i].col,
        };
        let mut w = String::new();
        while i < chars.len() && !chars[i].c.is_whitespace() {
            w.push(chars[i].c);
            i += 1;
        }
        out.push((w, at));
    }
    out
}

/// A value as SQL text (doubles as numeric literals; `None` for NaN and infinities).
pub(crate) fn push_value(buf: &mut String, v: &Value) -> Option<()> {
    match v {
        Value::Null => buf.push_str("NULL"),
        Value::Bool(true) => buf.push_str("TRUE"),
        Value::Bool(false) => buf.push_str("FALSE"),
        Value::Int(i) => buf.push_str(itoa::Buffer::new().format(*i)),
        Value::Double(d) => {
            if !d.is_finite() {
                return None;
            }
            use std::fmt::Write;
            let _ = write!(buf, "{d:?}");
        }
        Value::Text(s) => buf.push_str(s),
    }
    Some(())
}
