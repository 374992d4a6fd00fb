//! The script language: pgbench's, so users' pgbench scripts run unchanged, plus sections
//! naming transactions, setup and teardown, and statements for one dialect only.
//!
//! This module knows no database: the runner hands it an [`Executor`] that sends SQL.
//!
//! CONTRACT (filled in by the language's implementation; the runner relies on exactly this):
//! - [`Script::load`] reads the files (and built-in names) with their weights, and the
//!   user's `--define`s; every error says file, line, column and what was expected.
//! - [`Script::for_dialect`] keeps the statements of one dialect (`\only`), and refuses a
//!   script with nothing to run there.
//! - [`Client`] is one worker's state (variables, random state); [`Client::choose`] draws a
//!   transaction by weight; [`Client::run`] runs it, [`Client::retry`] runs the last one
//!   again with the same random draws (pgbench's retry rule).

// TEMPORARY: the contract's signatures, so the runner compiles before the language lands.
#![allow(missing_docs, unused_variables, dead_code)]
use std::time::Duration;
pub struct Pos {
    pub file: String,
    pub line: u32,
    pub col: u32,
}
impl std::fmt::Display for Pos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}
#[derive(Debug)]
pub struct ScriptError;
impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "x")
    }
}
impl std::error::Error for ScriptError {}
#[derive(Clone, Debug)]
pub struct Source;
impl std::str::FromStr for Source {
    type Err = ScriptError;
    fn from_str(s: &str) -> Result<Source, ScriptError> {
        todo!()
    }
}
impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "x")
    }
}
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
    Text(String),
}
pub struct Script;
pub struct TransactionInfo {
    pub name: String,
    pub weight: u32,
    pub source: String,
    pub statements: u32,
}
impl Script {
    pub fn load(sources: &[Source], defines: &[(String, String)]) -> Result<Script, ScriptError> {
        todo!()
    }
    pub fn for_dialect(&self, dialect: &str) -> Result<Script, ScriptError> {
        todo!()
    }
    pub fn transactions(&self) -> Vec<TransactionInfo> {
        todo!()
    }
    pub fn has_setup(&self) -> bool {
        todo!()
    }
    pub fn has_teardown(&self) -> bool {
        todo!()
    }
    pub fn texts(&self) -> Vec<(String, String)> {
        todo!()
    }
}
pub trait Executor {
    type Error;
    fn query(&mut self, sql: &str) -> Result<Vec<Vec<Value>>, Self::Error>;
    fn text_literal(&self, s: &str) -> String;
    fn sleep(&mut self, d: Duration) -> bool;
}
pub struct Done {
    pub statements: u32,
}
pub enum Failure<E> {
    Sql { at: Pos, sql: String, error: E },
    Script { at: Pos, message: String },
    Stopped,
}
pub struct Client<'s>(&'s Script);
impl<'s> Client<'s> {
    pub fn new(script: &'s Script, client_id: u32, seed: u64) -> Client<'s> {
        todo!()
    }
    pub fn choose(&mut self) -> usize {
        todo!()
    }
    pub fn run<E: Executor>(
        &mut self,
        txn: usize,
        exec: &mut E,
    ) -> Result<Done, Failure<E::Error>> {
        todo!()
    }
    pub fn retry<E: Executor>(&mut self, exec: &mut E) -> Result<Done, Failure<E::Error>> {
        todo!()
    }
    pub fn setup<E: Executor>(&mut self, exec: &mut E) -> Result<Done, Failure<E::Error>> {
        todo!()
    }
    pub fn teardown<E: Executor>(&mut self, exec: &mut E) -> Result<Done, Failure<E::Error>> {
        todo!()
    }
}
