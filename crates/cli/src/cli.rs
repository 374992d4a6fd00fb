//! The command-line grammar. Parsing only: defaults that need the environment and rules that
//! involve several flags are resolved by each command's plan (see `commands/`).

use clap::{Parser, Subcommand};

use crate::commands;
use crate::values::{ColorWhen, VERSION};

/// oio (outstanding I/O): characterize, run, sweep and compare storage and database workloads.
#[derive(Debug, Parser)]
#[command(
    name = "oio",
    version = VERSION,
    help_expected = true,
    max_term_width = 100,
    arg_required_else_help = true,
    after_help = "Start with `oio run` (the default OLTP profile on a 1 GiB file in the current directory) and `oio profiles`."
)]
pub struct Cli {
    /// Colour: auto (only on a terminal, honouring NO_COLOR and TERM=dumb), always or never.
    // One short line and no per-value block: a global flag is shown in every command's help.
    #[arg(
        long,
        value_enum,
        default_value_t = ColorWhen::Auto,
        global = true,
        value_name = "WHEN",
        hide_possible_values = true,
        help_heading = "Global options",
        display_order = 1000
    )]
    pub color: ColorWhen,

    /// Print only errors and where the result was saved (no header, progress, summary, notices).
    #[arg(
        short,
        long,
        global = true,
        help_heading = "Global options",
        display_order = 1001
    )]
    pub quiet: bool,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// oio's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a workload against a file or block device and measure it.
    Run(commands::run::Args),
    /// The I/O blender: sequential streams alone, then together; throughput and sequentiality.
    Blend(commands::blend::Args),
    /// Check a target against the journal of an `oio run --verify` (after a crash or kill).
    Verify(commands::verify::Args),
    /// List the built-in workload profiles, or print one as a workload file.
    Profiles(commands::profiles::Args),
    /// TPC-C-like (TPROC-C-like) database benchmark: build, run (NOPM, TPM, waits), check.
    Tpcc(commands::tpcc::Args),
    /// Your own transactions (pgbench scripts, built-in scenarios) with waits and device I/O.
    Sql(commands::sql::Args),
    /// Record /proc/diskstats live (iostat -x numbers) and save an observation.
    Record(commands::record::Args),
    /// Turn telemetry (perfmon, iostat, diskstats, blkparse, fio) into a workload file.
    Characterize(commands::characterize::Args),
    /// Write a workload as a fio job file, a diskspd command line or a vdbench parameter file.
    Export(commands::export::Args),
    /// Convert a fio JSON result into an oio run result.
    Import(commands::import::Args),
    /// Sweep queue depth (and block size, read share): find the knee where latency takes over.
    Sweep(commands::sweep::Args),
    /// Compare configurations from repeated runs or TPC-C results: margins, intervals, verdicts.
    Compare(commands::compare::Args),
    /// Replay a block trace (fio iolog, blkparse, MSR CSV) at its recorded times or a fixed depth.
    Replay(commands::replay::Args),
    /// Run again exactly what produced a result (the same plan, the same random numbers).
    Rerun(commands::rerun::Args),
    /// Write an HTML report (inline SVG charts), and SVG, PNG or CSV files, from results.
    Report(commands::report::Args),
    /// Name the bottleneck (queue, device, log, locks, CPU) with the evidence, from any inputs.
    Diagnose(commands::diagnose::Args),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish) on stdout.
    Completions(commands::completions::Args),
    /// Print oio's manual page (roff) on stdout, or the page of one command.
    Man(commands::man::Args),
    /// Serve `oio fleet` on stdin/stdout (started by a launcher such as ssh; not a daemon).
    Agent(commands::agent::Args),
    /// Run one workload on many hosts at once over SSH (or any stdio launcher) and merge.
    Fleet(commands::fleet::Args),
}

#[test]
fn verify_cli() {
    use clap::CommandFactory;
    Cli::command().debug_assert();
}
