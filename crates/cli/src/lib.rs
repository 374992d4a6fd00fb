//! The `oio` command line: glue between the measuring crates and the terminal.
//!
//! `main.rs` parses [`Cli`] and calls [`run`]; tests call [`run`] in process. The commands
//! that measure (`run`, `sweep`, `compare --run`, `blend`, `rerun`) share the flag groups of
//! [`args`], turn them into an `oio_lab` plan, run it through [`experiment`] and print; they
//! never import each other. Exit codes:
//! 0 success; 1 the command finished but what it checked failed (I/O errors during a run, a
//! failed consistency check); 2 bad usage or an error that stopped the command, or a result
//! that could not be saved where asked (it was saved elsewhere or printed, see
//! [`results`]); 128 + the signal's number when SIGINT (130), SIGTERM (143) or SIGHUP (129)
//! stopped the command (its partial result is written).
#![forbid(unsafe_code)]

pub mod args;
pub mod cli;
pub mod commands;
pub mod device_recording;
pub mod experiment;
pub mod groups;
pub mod inputs;
pub mod interrupt;
pub mod output;
pub mod results;
pub mod server_settings;
pub mod sql_args;
pub mod sql_run;
pub mod sweep_args;
pub mod tpcc_args;
pub mod tpcc_run;
pub mod values;

pub use cli::{Cli, Command};

use clap::CommandFactory;
use std::process::ExitCode;

/// Exit code when the command finished but a check failed.
pub const EXIT_CHECK_FAILED: u8 = 1;
/// Exit code for usage and runtime errors.
pub const EXIT_ERROR: u8 = 2;

/// Runs one command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    output::style::set_color_choice(cli.color);
    output::style::set_quiet(cli.quiet);
    let code = dispatch(cli.command)?;
    Ok(interrupt::exit_code(results::exit_code(code)))
}

/// Runs the chosen command.
fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Run(args) => commands::run::run(args),
        Command::Rerun(args) => commands::rerun::run(args),
        Command::Verify(args) => commands::verify::run(args),
        Command::Blend(args) => commands::blend::run(args),
        Command::Profiles(args) => commands::profiles::run(args),
        Command::Tpcc(args) => commands::tpcc::run(args),
        Command::Sql(args) => commands::sql::run(args),
        Command::Record(args) => commands::record::run(args),
        Command::Replay(args) => commands::replay::run(args),
        Command::Characterize(args) => commands::characterize::run(args),
        Command::Export(args) => commands::export::run(args),
        Command::Import(args) => commands::import::run(args),
        Command::Sweep(args) => commands::sweep::run(args),
        Command::Compare(args) => commands::compare::run(args),
        Command::Report(args) => commands::report::run(args),
        Command::Diagnose(args) => commands::diagnose::run(args),
        Command::Completions(args) => commands::completions::run(args, Cli::command()),
        Command::Man(args) => commands::man::run(args, Cli::command()),
        Command::Agent(args) => commands::agent::run(args),
        Command::Fleet(args) => commands::fleet::run(args),
    }
}

/// Prints an error chain the one way oio does and returns its exit code. A closed stdout
/// (`oio run --json | head`) is not an error.
pub fn report_error(err: &anyhow::Error) -> ExitCode {
    for cause in err.chain() {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::BrokenPipe {
                return ExitCode::SUCCESS;
            }
        }
    }
    output::style::print_error(&error_text(err));
    interrupt::exit_code(ExitCode::from(EXIT_ERROR))
}

/// The error chain joined by ": ", each cause once. Many error types print their source in
/// their own message *and* return it from `source()` (`"{file}: {source}"`), so anyhow's `{:#}`
/// would say "No such file or directory (os error 2)" twice; a cause whose text already ends
/// the message is left out.
pub fn error_text(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let s = cause.to_string();
        if !text.is_empty() && text.ends_with(&s) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&s);
    }
    text
}
