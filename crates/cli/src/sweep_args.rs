//! The one group of sweep flags: how a ladder of depths is repeated, ordered, held to steady
//! state, judged and refined. `oio sweep` and `oio fleet sweep` flatten it and build their
//! [`SweepPlan`] through [`SweepRules::plan`], so the two cannot drift apart; only where the
//! runs happen differs.

use crate::args::{parse_with, KneeArgs, RepeatArgs, RoundOrderArg, WorkloadFlags};
use oio_analysis::knee::LatencyTarget;
use oio_core::SizeMix;
use oio_lab::sweep::SweepPlan;
use oio_lab::RunSettings;
use oio_lab::{RunConfig, WorkloadOverrides, WorkloadSource};

/// Repeats, order, steady state, knee rules and refinement of a sweep.
#[derive(Clone, Debug, clap::Args)]
pub struct SweepRules {
    /// Runs per point.
    #[command(flatten)]
    pub repeat: RepeatArgs,

    /// Order of the points within each round of repeats: counterbalanced (every other round
    /// reversed), interleaved (always the same), or shuffled (reproducible with --seed).
    #[arg(long, value_enum, default_value_t = RoundOrderArg::Counterbalanced, value_name = "ORDER")]
    pub order: RoundOrderArg,

    /// Steady state: rerun (counting the run as warm-up) while IOPS drift over a run exceeds PCT.
    #[arg(long, value_name = "PCT")]
    pub steady: Option<f64>,

    /// Most runs per repeat while waiting for steady state.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub steady_max_runs: u32,

    /// The X %-of-peak rule.
    #[command(flatten)]
    pub knee: KneeArgs,

    /// Also report the deepest depth meeting a latency target: STAT=DURATION with STAT
    /// mean, p50, p90 or p99, e.g. p99=2ms (fio's latency_target idea).
    #[arg(long, value_name = "STAT=DURATION")]
    pub latency_target: Option<LatencyTarget>,

    /// After the grid, measure the geometric midpoints between grid depths around the depths
    /// the rules named, then report again.
    #[arg(long)]
    pub refine: bool,

    /// Production outstanding I/O (e.g. from `oio characterize`): where it lies against the knee.
    #[arg(long, value_name = "N")]
    pub production_qd: Option<f64>,

    /// Further workload flags for every point in one string, e.g. '--random-pct 50' (the same
    /// flags can be given directly; those win).
    #[arg(long = "with", value_name = "ARGS", allow_hyphen_values = true)]
    pub with: Option<String>,
}

/// The grid a sweep walks: depths, and optionally block sizes and read shares.
pub struct Grid<'a> {
    pub qd: &'a [u32],
    pub bs: &'a [SizeMix],
    pub read_pct: &'a [f64],
}

impl SweepRules {
    /// Folds `--with` into the workload flags and the seed (flags given directly win).
    pub fn apply_with(
        &self,
        flags: &mut WorkloadFlags,
        settings: &mut RunSettings,
    ) -> anyhow::Result<()> {
        if let Some(w) = &self.with {
            let line = parse_with(w)?;
            *flags = flags.clone().or(line.workload);
            settings.seed = settings.seed.or(line.seed);
        }
        Ok(())
    }

    /// The sweep of `base` over `grid` by these rules, checked.
    pub fn plan(
        &self,
        base: RunConfig,
        source: WorkloadSource,
        overrides: WorkloadOverrides,
        grid: Grid<'_>,
    ) -> anyhow::Result<SweepPlan> {
        let mut qd = grid.qd.to_vec();
        qd.sort_unstable();
        qd.dedup();
        let plan = SweepPlan {
            base,
            source,
            overrides,
            qd,
            bs: grid.bs.to_vec(),
            read_pct: grid.read_pct.to_vec(),
            repeat: self.repeat.repeat,
            order: self.order.into(),
            steady_pct: self.steady,
            steady_max_runs: self.steady_max_runs,
            knee_fraction: self.knee.knee_pct / 100.0,
            latency_target: self.latency_target,
            refine: self.refine,
            production_qd: self.production_qd,
        };
        plan.check()?;
        Ok(plan)
    }
}
