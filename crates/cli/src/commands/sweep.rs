//! `oio sweep`: run a workload at a ladder of queue depths (optionally a grid of block sizes
//! and read shares), each point with its ramp, repeated, optionally until steady state, and
//! report the knee by stated rules: power, saturation, X % of the peak and an optional latency
//! target, all of them, with the flags they raise, the knee's range and a confidence word (or
//! "undecided", why, and what would decide it). Repeats run in rounds across all points
//! (`--order`, counterbalanced by default). `--refine` measures geometric midpoints around the
//! depths the rules named. The sweep itself is `oio_lab::sweep`; every point's runs are
//! ordinary run results, listed in the sweep document's `points[].sources`.

use crate::args::WorkloadFlags;
use crate::experiment::{execute_labelled, present};
use crate::sweep_args::{Grid, SweepRules};
use oio_core::SizeMix;
use oio_engine::EngineKind;
use oio_lab::sweep::SweepPlan;
use oio_lab::{Plan, RunSettings, WorkloadSource};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `oio sweep`.
#[derive(Debug, clap::Args)]
#[command(
    mut_arg("time", |a| a.default_value("10s")),
    mut_arg("ramp", |a| a.default_value("2s")),
    after_help = "Examples:
  oio sweep randread ./t.dat --size 1G --qd 1,2,4,8,16,32,64
  oio sweep oltp-data /mnt/san/t.dat --size 10G --repeat 3 --steady 10
  oio sweep randread ./t.dat --repeat 4 --order shuffled --seed 7
  oio sweep randrw ./t.dat --size 1G --bs 4k,64k --read-pct 100,70,0 --qd 1,4,16,64
  oio sweep workload.toml ./t.dat --production-qd 24      (where does production sit?)
  oio sweep randread ./t.dat --latency-target p99=2ms --refine
  oio sweep randread --engine null --sim servers=8,service=1ms,dist=exp --time 1s --ramp 0s

Knee rules, all reported (the headline knee is the first that names a depth of
saturation, X % of the peak, power):
  power        the depth with the most IOPS ÷ mean latency (Kleinrock's power)
  saturation   the smallest depth from which no deeper point gains IOPS faster than
               depth^0.2 (doubling adds < 15 %) or beyond the noise, while mean latency
               grows at least as depth^0.8: queueing, not work
  X % of peak  the smallest depth reaching --knee-pct (90) % of the plateau (the median
               IOPS from the saturation depth on) or, without one, of the highest point
  latency      with --latency-target p99=2ms: the deepest depth before the first that
               misses it (also mean, p50, p90)
Noise: the spread of each depth's repeats, or with one run per depth that of its mean
from the run's intervals (which cannot show noise lasting a whole run: --repeat N).
Repeats run in rounds across all depths (--order), so a neighbour's burst hits one repeat
of a few depths rather than every repeat of one. Flags: the top still rising beyond the
noise (extend --qd), a plateau, or undecided; points more than 3 × the noise below both
neighbours (outliers, left out of the rules); a depth whose repeats disagree; one run per
depth.
Range and confidence: the rules are applied again to resamples of the repeats (or of each
run's mean within its noise): 'knee between qd 8 and 16 (high confidence)'. Undecided,
with why and what would decide it, when the range spans more than 2 grid steps, the rules
disagree by more, the top still rises, or the points from the knee on cannot be shown flat.

WORKLOAD is a workload file, a built-in profile (oio profiles) or a pattern (randread, randrw…).")]
pub struct Args {
    /// Workload file, profile name, or access pattern (read, write, randread, randwrite, randrw, rw).
    #[arg(value_name = "WORKLOAD")]
    pub workload: String,

    /// Queue depths to sweep.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "1,2,4,8,16,32,64,128,256"
    )]
    pub qd: Vec<u32>,

    /// Block sizes to sweep (a grid with --read-pct), e.g. 4k,64k. Default: the workload's
    /// sizes (4k for a pattern).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub bs: Vec<SizeMix>,

    /// Read shares to sweep, percent, e.g. 100,70,0. Default: the workload's (50 for the
    /// patterns randrw and rw).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = crate::args::parse_pct)]
    pub read_pct: Vec<f64>,

    /// The other workload flags, applied at every point.
    #[command(flatten)]
    pub flags: WorkloadFlags,

    /// Targets and how each run goes.
    #[command(flatten)]
    pub settings: RunSettings,

    /// Repeats, order, steady state, knee rules, refinement (as `oio fleet sweep`).
    #[command(flatten)]
    pub rules: SweepRules,

    /// Directory for the results (each point's runs and the sweep document).
    #[arg(long, value_name = "DIR", default_value = "oio-results")]
    pub out: PathBuf,

    /// A name for this sweep, recorded in the sweep document and each of its runs and put in
    /// their file names, e.g. the setting under test: `compare`, `report` and `diagnose` name
    /// the runs by it.
    #[arg(long, value_name = "NAME", value_parser = crate::args::parse_label)]
    pub label: Option<String>,

    /// Print the sweep as JSON on stdout (schema oio.sweep).
    #[arg(long)]
    pub json: bool,
}

/// The sweep these arguments describe.
fn plan(args: &Args) -> anyhow::Result<SweepPlan> {
    let mut flags = args.flags.clone();
    let mut s = args.settings.clone();
    args.rules.apply_with(&mut flags, &mut s)?;
    // A simulated device needs the null engine, which the sweep then implies.
    if s.sim.is_some() && s.engine == EngineKind::Auto {
        s.engine = EngineKind::Null;
    }
    if s.sim.is_some() && s.engine != EngineKind::Null {
        anyhow::bail!(
            "--sim simulates a device behind the null engine: drop --engine {} or use --engine null",
            clap::ValueEnum::to_possible_value(&args.settings.engine)
                .map(|v| v.get_name().to_string())
                .unwrap_or_default()
        );
    }
    let source = WorkloadSource::from_word(&args.workload).resolve()?;
    let overrides = crate::args::ShapeArgs::default().overrides(&flags);
    let base = s.config(&source, &overrides)?;
    let grid = Grid {
        qd: &args.qd,
        bs: &args.bs,
        read_pct: &args.read_pct,
    };
    args.rules.plan(base, source, overrides, grid)
}

/// Runs `oio sweep`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let plan = Plan::Sweep(plan(&args)?);
    crate::results::check_destination(&args.out, "--out DIR")?;
    let outcome = execute_labelled(&plan, &args.out, true, args.label.as_deref())?;
    present(&plan, &outcome, &args.out, args.json, &Default::default())
}
