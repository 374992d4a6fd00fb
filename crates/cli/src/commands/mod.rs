//! One module per command: its arguments (`Args`) and its `run`.

pub mod profiles;
pub mod run;

use crate::cli::Command;
use std::process::ExitCode;

/// Runs the chosen command.
pub fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Run(args) => run::run(args),
        Command::Profiles(args) => profiles::run(args),
    }
}
