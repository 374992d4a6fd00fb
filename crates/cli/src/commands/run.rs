//! `oio run`: run a workload (a profile, a file or inline flags) against targets, once or
//! `--repeat N` times.

use crate::args::RunFlags;
use crate::experiment::{execute_labelled, present};
use oio_lab::Plan;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `oio run`.
#[derive(Clone, Debug, clap::Args)]
#[command(after_help = "Examples:
  oio run                                   oltp-data profile on ./oio-testfile (1 GiB, created)
  oio run --profile tempdb --time 60s /mnt/san/oio.dat --size 10G
  oio run --rw randread --bs 4k --qd 32 --size 1G --time 30s ./t.dat
  oio run --rw randrw --read-pct 70 --bs 64k:68,8k:32 --qd 16 /dev/nvme0n1   (reads only need no flag)
  oio run -w log.toml --target log=/dev/sdb --target data=/dev/sdc,/dev/sdd")]
pub struct Args {
    /// The workload, its targets and how it runs.
    #[command(flatten)]
    pub flags: RunFlags,

    /// Directory for the result file.
    #[arg(long, value_name = "DIR", default_value = "oio-results")]
    pub out: PathBuf,

    /// A name for this run, recorded in its result (each result with --repeat) and put in its
    /// file name, e.g. the setting under test: `compare`, `report` and `diagnose` name the
    /// runs by it.
    #[arg(long, value_name = "NAME", value_parser = crate::args::parse_label)]
    pub label: Option<String>,

    /// Print the result as JSON on stdout (and nothing else there).
    #[arg(long)]
    pub json: bool,

    /// Run N times (one result file each) and summarize over runs; with --json, an array.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub repeat: u32,

    /// Record the targets' devices from /proc/diskstats while the run goes, saved beside the
    /// result as RESULT.device.json (for `oio compare CAPTURE RESULT`; one run only).
    #[arg(long)]
    pub record_device: bool,
}

/// Runs `oio run`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Usage errors first, then where the results go, both before any I/O.
    workload_as_target(&args.flags.settings.targets)?;
    let run = args.flags.config()?;
    crate::results::check_destination(&args.out, "--out DIR")?;
    let plan = if args.repeat > 1 {
        Plan::Repeat {
            run,
            count: args.repeat,
        }
    } else {
        Plan::Run { run }
    };
    let outcome = if args.record_device {
        crate::device_recording::around(&plan, args.json, || {
            execute_labelled(&plan, &args.out, true, args.label.as_deref())
        })?
    } else {
        execute_labelled(&plan, &args.out, true, args.label.as_deref())?
    };
    present(&plan, &outcome, &args.out, args.json, &Default::default())
}

/// `oio run randread` (as `oio sweep randread` reads) names a workload where `oio run` takes a
/// target, and would create a file of that name: refused when no such file exists and the name
/// is a bare access pattern or profile, with what was likely meant.
fn workload_as_target(targets: &[PathBuf]) -> anyhow::Result<()> {
    for t in targets {
        let Some(name) = t.to_str().filter(|n| !n.contains('/')) else {
            continue;
        };
        let pattern = name.parse::<oio_lab::workload::Pattern>().is_ok();
        let profile = oio_core::profiles::profile(name).is_some();
        if (pattern || profile) && std::fs::symlink_metadata(t).is_err() {
            let meant = if pattern {
                format!("--rw {name}")
            } else {
                format!("--profile {name}")
            };
            anyhow::bail!(
                "'{name}' is a target for `oio run` (a file or device), and no such file exists; it names {}: did you mean `oio run {meant}`? To create a file by that name, write ./{name}",
                if pattern { "an access pattern" } else { "a profile" }
            );
        }
    }
    Ok(())
}
