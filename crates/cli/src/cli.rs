//! The command-line grammar. Parsing only: defaults that need the environment and rules that
//! involve several flags are resolved by each command's plan (see `commands/`).

use clap::{Parser, Subcommand, ValueEnum};

use crate::commands;

/// oio (outstanding I/O): characterize, run, sweep and compare storage and database workloads.
#[derive(Debug, Parser)]
#[command(
    name = "oio",
    version,
    help_expected = true,
    max_term_width = 100,
    arg_required_else_help = true,
    after_help = "Start with `oio run` (the default OLTP profile on a 1 GiB file in the current directory) and `oio profiles`."
)]
pub struct Cli {
    /// When to use colour on the terminal (NO_COLOR and TERM=dumb are honoured with auto).
    #[arg(long, value_enum, default_value_t = ColorWhen::Auto, global = true, value_name = "WHEN")]
    pub color: ColorWhen,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The colour policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    /// Colour when the output is a terminal.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// oio's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a workload against a file or block device and measure it.
    Run(commands::run::Args),
    /// List the built-in workload profiles, or print one as a workload file.
    Profiles(commands::profiles::Args),
}

#[test]
fn verify_cli() {
    use clap::CommandFactory;
    Cli::command().debug_assert();
}
