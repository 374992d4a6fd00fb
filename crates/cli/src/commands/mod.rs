//! One module per command: its arguments (`Args`) and its `run`.

pub mod agent;
pub mod blend;
pub mod calibrate;
pub mod capture_check;
pub mod characterize;
pub mod compare;
pub mod completions;
pub mod diagnose;
pub mod export;
pub mod fleet;
pub mod import;
pub mod man;
pub mod profiles;
pub mod record;
pub mod replay;
pub mod report;
pub mod rerun;
pub mod run;
pub mod sql;
pub mod sweep;
pub mod tpcc;
pub mod verify;

use crate::cli::Command;
use std::process::ExitCode;

/// Runs the chosen command.
pub fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Run(args) => run::run(args),
        Command::Rerun(args) => rerun::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Blend(args) => blend::run(args),
        Command::Profiles(args) => profiles::run(args),
        Command::Tpcc(args) => tpcc::run(args),
        Command::Sql(args) => sql::run(args),
        Command::Record(args) => record::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Characterize(args) => characterize::run(args),
        Command::Export(args) => export::run(args),
        Command::Import(args) => import::run(args),
        Command::Sweep(args) => sweep::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Report(args) => report::run(args),
        Command::Diagnose(args) => diagnose::run(args),
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => man::run(args),
        Command::Agent(args) => agent::run(args),
        Command::Fleet(args) => fleet::run(args),
    }
}
