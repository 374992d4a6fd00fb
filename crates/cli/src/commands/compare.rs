//! `oio compare`: is configuration B better than A, by how much, and is the difference real?
//!
//! Two ways in: groups of existing results (`oio compare raid5/ raid10/`, each a directory or a
//! file of oio or fio results, or of `oio tpcc run` results), or `--run 'ARGS' --run 'ARGS'`,
//! which runs the configurations itself, counterbalanced A B, B A … so slow drift (a filling
//! SSD, a warming cache, a neighbour's backup) hits every configuration alike instead of biasing
//! the one that ran last; the comparison records the order it ran. Each `--run` string is parsed against the flags of `oio run`; the
//! interleaving is `oio_lab`'s, the statistics `oio_analysis::compare`'s.

use crate::args::parse_run_line;
use crate::experiment::{execute, present};
use crate::output::style;
use anyhow::{bail, Context};
use oio_analysis::compare::{self, Options};
use oio_analysis::stats;
use oio_lab::{Interleave, Labelled, Order, Plan};
use std::path::PathBuf;
use std::process::ExitCode;

mod capture_check;

/// Arguments of `oio compare`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio compare raid5/ raid10/                      each directory: repeated runs of one configuration
  oio compare base.json tuned-*.json              a file per group
  oio compare --run '--rw randread --qd 32 /mnt/a/t.dat' --run '--rw randread --qd 32 /mnt/b/t.dat' --repeat 5
  oio compare before/ after/ --label before,after  TPC-C results (oio tpcc run): NOPM, TPM, p90/p99
  oio compare a/ b/ --json | jq .metrics.iops.margin_pct
  oio compare iostat-x.txt oio-results/            a capture against its replay's device (oio replay)

Margins are (B / A - 1) x 100 per metric, on the group values (means; percentiles from merged
histograms); the interval and the direction are of the same ratio. With fewer than 8 runs a side
the test is Welch's t-test on the log of that ratio (assumes log-normal run-to-run noise and
independent runs); with 8 or more a side, a Mann-Whitney rank test with a bootstrap interval.
Every metric x candidate is one family, corrected with Hochberg (5 % family-wise).
Verdicts: better/worse (significant after correction); \"equal within resolution\" (percentiles
at most one histogram bucket apart: under 0.8 % above 256 ns); \"no significant difference\" (a
change beyond +/- --equivalence percent would have been called); \"undecided\" with why and what
would decide (runs identical within a group, too few runs, too much noise: how many runs, a
quieter host).

With a capture first (iostat, perfmon, diskstats, blkparse, an oio record observation), the
second is a replay: its device's read share, sizes, IOPS, MiB/s, queue, latency and flush rate
beside the capture's, each passed or failed against a stated tolerance (exit 1 on any fail).")]
pub struct Args {
    /// Groups: result files or directories of them (oio or fio JSON), baseline first.
    #[arg(value_name = "GROUP")]
    pub groups: Vec<PathBuf>,

    /// Run a configuration (`oio run` arguments in one string); give it once per configuration.
    #[arg(
        long = "run",
        value_name = "ARGS",
        conflicts_with = "groups",
        allow_hyphen_values = true
    )]
    pub runs: Vec<String>,

    /// Runs per configuration with --run.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,

    /// Order of runs with --run: counterbalanced A B, B A, …; interleaved A B A B …; or shuffled
    /// within each round.
    #[arg(long, value_enum, default_value_t = OrderArg::Counterbalanced, value_name = "ORDER")]
    pub order: OrderArg,

    /// Names of the groups, in order: `--label a,b` or `--label a --label b` (default: the
    /// paths, or A, B, … with --run).
    #[arg(long = "label", value_name = "NAME", value_delimiter = ',')]
    pub labels: Vec<String>,

    /// "No significant difference" needs data that would have called a change of ± this many
    /// percent; noisier data is "undecided".
    #[arg(long, value_name = "PCT", default_value_t = 5.0)]
    pub equivalence: f64,

    /// Confidence level of the intervals, percent.
    #[arg(long, value_name = "PCT", default_value_t = 95.0)]
    pub confidence: f64,

    /// Bootstrap resamples.
    #[arg(long, value_name = "N", default_value_t = stats::DEFAULT_RESAMPLES)]
    pub resamples: usize,

    /// Random-number seed of the bootstrap (fixed by default: the same inputs print the same
    /// numbers).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Directory for the results of --run (one subdirectory per group).
    #[arg(long, value_name = "DIR", default_value = "oio-results")]
    pub out: PathBuf,

    /// Print the comparison as JSON on stdout (schema oio.compare).
    #[arg(long)]
    pub json: bool,
}

/// Order of runs in `--run` mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OrderArg {
    /// A B, B A, A B, … (every other round reversed, so drift hits every group alike).
    Counterbalanced,
    /// A B A B … (each round in the same order: the last group takes any drift).
    Interleaved,
    /// Each round in a random order (reproducible with --seed).
    Shuffled,
}

fn options(args: &Args) -> anyhow::Result<Options> {
    if !(50.0..100.0).contains(&args.confidence) {
        bail!(
            "--confidence {}: expected a percentage from 50 to 99.9",
            args.confidence
        );
    }
    if !(args.equivalence > 0.0 && args.equivalence < 100.0) {
        bail!(
            "--equivalence {}: expected a percentage above 0 and below 100",
            args.equivalence
        );
    }
    let d = Options::default();
    Ok(Options {
        confidence: args.confidence / 100.0,
        alpha: 0.05,
        resamples: args.resamples.max(100),
        seed: args.seed.unwrap_or(d.seed),
        equivalence_pct: args.equivalence,
    })
}

/// Checks `--label` against the number of groups: one name each, no name twice.
fn check_labels(labels: &[String], groups: usize) -> anyhow::Result<()> {
    if labels.len() > groups {
        bail!(
            "--label gives {} names ({}) for {groups} groups: give one name per group, in order",
            labels.len(),
            labels.join(", ")
        );
    }
    for (i, l) in labels.iter().enumerate() {
        if l.trim().is_empty() {
            bail!("--label: name {} is empty", i + 1);
        }
        if labels[..i].contains(l) {
            bail!("--label: '{l}' names two groups; give each group its own name");
        }
    }
    Ok(())
}

/// The interleaved comparison of the `--run` configurations.
fn interleave(args: &Args) -> anyhow::Result<Plan> {
    let mut configs = Vec::new();
    for (i, line) in args.runs.iter().enumerate() {
        let flags = parse_run_line(line).with_context(|| format!("--run '{line}'"))?;
        let run = flags.config().with_context(|| format!("--run '{line}'"))?;
        let label = args
            .labels
            .get(i)
            .cloned()
            .unwrap_or_else(|| ((b'A' + (i % 26) as u8) as char).to_string());
        configs.push(Labelled { label, run });
    }
    Ok(Plan::Interleave(Interleave {
        configs,
        repeat: args.repeat,
        order: match args.order {
            OrderArg::Counterbalanced => Order::Counterbalanced,
            OrderArg::Interleaved => Order::Interleaved,
            OrderArg::Shuffled => Order::Shuffled,
        },
        order_seed: args.seed.unwrap_or(0x5eed),
    }))
}

/// Runs `oio compare`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let o = options(&args)?;
    if !args.runs.is_empty() {
        if args.runs.len() < 2 {
            bail!("--run needs at least two configurations (give --run twice)");
        }
        check_labels(&args.labels, args.runs.len())?;
        let plan = interleave(&args)?;
        crate::results::check_destination(&args.out, "--out DIR")?;
        let outcome = execute(&plan, &args.out, true)?;
        return present(&plan, &outcome, &args.out, args.json, &o);
    }
    if args.groups.len() < 2 {
        bail!("compare needs at least two groups (files or directories), or --run twice");
    }
    // A capture (telemetry) first: the replay's device against it, not groups of runs.
    if capture_check::is_capture(&args.groups[0]) {
        if args.groups.len() != 2 {
            bail!(
                "{} is a capture: give it and one replay (`oio compare CAPTURE REPLAY`)",
                args.groups[0].display()
            );
        }
        return capture_check::run(&args.groups[0], &args.groups[1], args.json);
    }
    check_labels(&args.labels, args.groups.len())?;
    let (groups, kind) = crate::groups::load_groups(&args.groups, &args.labels)?;
    let c = compare::compare(&groups, kind, &o);
    if args.json {
        crate::output::print_json(&c)?;
        for w in &c.envelope.warnings {
            style::print_warning(w);
        }
        return Ok(ExitCode::SUCCESS);
    }
    // --quiet leaves errors and result paths; a comparison of files writes no file.
    if !style::quiet() {
        let mut out = crate::output::terminal::stdout();
        crate::output::compare::write_comparison(&mut out, &c)?;
    }
    Ok(ExitCode::SUCCESS)
}
