//! `oio fleet sweep`: a ladder of queue depths, each a fleet run on every host started
//! together; a sweep document (`oio.sweep`) of the merged points. The sweep is
//! `oio_lab::sweep`'s, as for `oio sweep` (its order, repeats, knee rules and fraction): only
//! the runs happen on the fleet.

use super::FleetArgs;
use crate::output::style;
use crate::results::{check_destination, result_file_name, write_json_atomic};
use crate::sweep_args::{Grid, SweepRules};
use oio_analysis::sweep::Measured;
use oio_core::document::StopReason;
use oio_core::result::Interval;
use oio_fleet::controller;
use oio_lab::sweep::{PointRunner, SweepPlan};
use oio_lab::{LabError, RunConfig, Step};
use std::io::Write;

use oio_lab::error::Result;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `oio fleet sweep`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio fleet sweep --hosts db1,db2,db3 --rw randread --bs 8k --time 30s /data/oio.dat --size 10G
  oio fleet sweep --inventory lab.toml -p oltp-data --sweep-qd 1,4,16,64,256")]
pub struct SweepArgs {
    /// Hosts, launcher, the workload and where results go (as `oio fleet run`).
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// Queue depths per host, one fleet run each per repeat.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "1,2,4,8,16,32,64"
    )]
    pub sweep_qd: Vec<u32>,
    /// Repeats, order, steady state, knee rules, refinement (as `oio sweep`).
    #[command(flatten)]
    pub rules: SweepRules,
}

/// Runs `oio fleet sweep`.
pub fn run(s: SweepArgs) -> anyhow::Result<ExitCode> {
    let a = &s.fleet;
    if s.sweep_qd.is_empty() || s.sweep_qd.contains(&0) {
        anyhow::bail!("--sweep-qd: every depth must be at least 1 (for example 1,4,16,64)");
    }
    check_destination(&a.out, "--out DIR")?;
    let plan = plan(&s)?;
    let stamp = oio_core::host::now_rfc3339();
    let mut fleet = OnTheFleet {
        a,
        dir: a
            .out
            .join(result_file_name("fleet-sweep", &stamp, &plan.name()).trim_end_matches(".json")),
        cancel: oio_core::Cancel::from_flag(crate::interrupt::stop_flag()),
        // One endpoint for the whole ladder: counters run on across depths, the interval restarts.
        metrics: super::metrics(&a.metrics, a.metrics_linger)?,
        runs_at: BTreeMap::new(),
        stop: None,
        interrupted: false,
    };
    let swept = oio_lab::sweep::run(&plan, &mut fleet, stamp)?;
    let mut sweep = swept.doc;
    // A fleet sweep is not one `oio rerun` can repeat on this host.
    sweep.envelope.plan = None;
    sweep.envelope.command = std::env::args().collect();
    sweep.envelope.label = a.label.clone();
    if let Some(stop) = fleet.stop {
        sweep.envelope.stopped(stop);
    }
    sweep.envelope.warnings.push(
        "each point is one fleet run: its IOPS are the hosts' summed, its latencies come from their summed histograms; per-host results sit beside each point's merged.json".into(),
    );
    let path = write_json_atomic(&fleet.dir, "sweep.json", &sweep)?;
    if a.json {
        crate::output::print_json(&sweep)?;
    } else if !style::quiet() {
        crate::output::fleet::print_sweep(&sweep);
    }
    style::print_saved("result", &path, a.json);
    Ok(match (fleet.interrupted, sweep.envelope.partial) {
        (true, _) => ExitCode::from(crate::interrupt::EXIT_INTERRUPTED),
        (_, true) => ExitCode::from(crate::EXIT_CHECK_FAILED),
        _ => ExitCode::SUCCESS,
    })
}

/// The sweep these arguments describe: `oio sweep`'s rules over the given depths, the runs on
/// the fleet.
fn plan(s: &SweepArgs) -> anyhow::Result<SweepPlan> {
    let run = &s.fleet.run;
    let mut workload = run.workload.clone();
    let mut settings = run.settings.clone();
    s.rules.apply_with(&mut workload, &mut settings)?;
    let source = run.source.source();
    let overrides = run.shape.overrides(&workload);
    let base = settings.config(&source, &overrides)?;
    let grid = Grid {
        qd: &s.sweep_qd,
        bs: &[],
        read_pct: &[],
    };
    s.rules.plan(base, source, overrides, grid)
}

/// The hosts of the fleet, each point one fleet run on all of them, started together.
struct OnTheFleet<'a> {
    a: &'a FleetArgs,
    /// The sweep's directory: each run's in `qdN` (`qdN-2`, … for repeats).
    dir: PathBuf,
    cancel: oio_core::Cancel,
    metrics: Option<crate::output::metrics::Metrics>,
    /// Runs made so far at each depth.
    runs_at: BTreeMap<u32, u32>,
    /// Why the sweep stopped early (a host lost, Ctrl-C).
    stop: Option<StopReason>,
    interrupted: bool,
}

/// One fleet run of a point, merged.
struct FleetPoint {
    doc: oio_fleet::merge::FleetResult,
    merged: PathBuf,
    /// The intervals every host delivered (a partial interval, a host missing, is not the
    /// fleet's IOPS).
    complete: Vec<Interval>,
    interrupted: bool,
    engine: &'static str,
}

impl PointRunner for OnTheFleet<'_> {
    type Run = FleetPoint;

    fn measure(&mut self, config: &RunConfig, qd: u32, label: &str) -> Result<FleetPoint> {
        self.measure_on_hosts(config, qd, label)
            .map_err(|e| LabError::Elsewhere(e.into()))
    }

    fn measured(run: &FleetPoint) -> Measured<'_> {
        Measured {
            total: &run.doc.summary.total,
            intervals: &run.complete,
            // The merged document does not carry the hosts' noise; each host's result does.
            noisy: false,
        }
    }

    fn engine(run: &FleetPoint) -> String {
        // Each host's own engine is in its result; the sweep names the one asked for.
        run.engine.to_string()
    }

    fn keep(&mut self, run: &FleetPoint, _: &Step, _: &str) -> Result<(String, bool)> {
        for l in &run.doc.lost {
            style::print_warning(&oio_core::text::printable(l));
        }
        let go_on = !(run.interrupted || run.doc.envelope.partial);
        if !go_on {
            // A point with a host missing is not comparable with the others: stop here.
            self.interrupted = run.interrupted;
            self.stop = Some(run.doc.envelope.stop_reason);
        }
        Ok((run.merged.display().to_string(), go_on))
    }

    fn notice(&mut self, text: &str) {
        style::print_notice(text);
    }

    fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

impl OnTheFleet<'_> {
    /// Runs `config` on every host at once and merges and saves what they measured.
    fn measure_on_hosts(
        &mut self,
        config: &RunConfig,
        qd: u32,
        label: &str,
    ) -> anyhow::Result<FleetPoint> {
        let a = self.a;
        let plan = &config.plan;
        let jobs = super::io_jobs(&a.host, plan, None)?;
        if !style::quiet() {
            let _ = writeln!(
                crate::output::terminal::stderr(),
                "oio fleet sweep: {label} on {} hosts",
                jobs.len()
            );
        }
        let live = crate::output::fleet::FleetLive::new();
        let metrics = &self.metrics;
        let run = controller::run_with_progress(&jobs, &a.host.options(), &self.cancel, &mut |p| {
            live.update(p);
            if let Some(m) = metrics {
                m.update(p);
            }
        });
        live.finish();
        let run = run?;
        let n = self.runs_at.entry(qd).or_insert(0);
        *n += 1;
        let sub = match *n {
            1 => format!("qd{qd}"),
            n => format!("qd{qd}-{n}"),
        };
        let (doc, merged) =
            super::save_io(&self.dir.join(sub), &run, plan, self.a.label.as_deref())?;
        let hosts = doc.hosts.len();
        let complete = doc
            .intervals
            .iter()
            .zip(&doc.hosts_per_interval)
            .filter(|(_, &n)| n == hosts)
            .map(|(i, _)| i.clone())
            .collect();
        Ok(FleetPoint {
            doc,
            merged,
            complete,
            interrupted: run.interrupted,
            engine: plan.engine.name(),
        })
    }
}
