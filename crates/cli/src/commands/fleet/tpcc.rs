//! `oio fleet tpcc run`: the TPC-C-like benchmark on every host's own database (or one shared
//! database from several client hosts), started together; NOPM and TPM summed per interval,
//! and scaling efficiency against a one-host result.

use super::HostArgs;
use crate::output::style;
use crate::results::{check_destination, result_file_name, write_json_atomic};
use anyhow::bail;
use oio_core::document::{read, read_text, Kind};
use oio_fleet::controller::{self, HostJob, Work};
use oio_tpcc::TpccResult;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `oio fleet tpcc`.
#[derive(Debug, clap::Args)]
pub struct TpccArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: TpccAction,
}

/// `oio fleet tpcc` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum TpccAction {
    /// Run on every host at once (each host's database built first with `oio tpcc build`).
    Run(TpccRunArgs),
    /// A ladder of hosts (1, 2, 4, … N), each a fleet TPC-C run; scaling efficiency of the
    /// merged NOPM against the first step and where it falls below a threshold.
    Scale(TpccScaleArgs),
}

/// Arguments of `oio fleet tpcc run`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio fleet tpcc run --hosts db1,db2,db3,db4 --db 'postgres://oio@{host}/oio' --workers 16 --time 5m
  oio fleet tpcc run --inventory lab.toml --baseline oio-results/tpcc-one-host.json
  (inventory: [[host]] name = \"db1\", db = \"postgres://oio@10.0.0.1/oio\")

Every option of `oio tpcc run` is taken here and means the same on each host: --db is the
database as each host's agent sees it ({host} is replaced by the host's name; an inventory's
per-host `db` takes precedence), and each host adds its index to --seed. A fleet run is one
step: one worker count, run once (`oio fleet tpcc scale` makes a ladder of hosts).
--connect-timeout bounds the hosts' answer; the database's is --db-connect-timeout.")]
#[command(mut_arg("db_connect_timeout", |a| {
    let h = "PostgreSQL: each host gives up on its database connection (TCP connect, startup and authentication) after this long (`oio tpcc run --connect-timeout`). A connect_timeout in the URL takes precedence";
    a.long("db-connect-timeout").help(h).long_help(h)
}))]
pub struct TpccRunArgs {
    /// Hosts and how to reach them.
    #[command(flatten)]
    pub host: HostArgs,
    /// The TPC-C run on each host: the flag group of `oio tpcc run`.
    #[command(flatten)]
    pub tpcc: crate::tpcc_args::RunArgs,
    /// A one-host `oio tpcc run` result with the same workers and warehouses per host:
    /// scaling efficiency = merged NOPM ÷ (hosts started × its NOPM).
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Serve the live figures (per host and merged NOPM and TPM, new orders, transaction
    /// latency histograms) in Prometheus' text format at http://ADDR/metrics while the run
    /// lasts, e.g. 127.0.0.1:9464.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// With --metrics: keep serving the final figures this long after the run ends, so a
    /// scraper gets the last interval too (Ctrl-C ends the wait).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = crate::values::duration_arg, requires = "metrics")]
    pub metrics_linger: std::time::Duration,
}

impl TpccRunArgs {
    /// The one worker count of each host (checked by [`tpcc_jobs`]).
    pub(super) fn workers(&self) -> u32 {
        self.tpcc.workers.first().copied().unwrap_or(0)
    }
}

/// Arguments of `oio fleet tpcc scale`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio fleet tpcc scale --hosts db1,db2,db3,db4 --db 'postgres://oio@{host}/oio' --workers 8 --time 2m
  oio fleet tpcc scale --inventory lab.toml --steps 1,2,3,4 --threshold 0.9")]
#[command(mut_arg("baseline", |a| a.hide(true)))]
pub struct TpccScaleArgs {
    /// Hosts, databases and the plan of every step (as `oio fleet tpcc run`; no --baseline:
    /// the first step is the ladder's baseline, and the option is hidden here).
    #[command(flatten)]
    pub run: TpccRunArgs,
    /// Hosts in each step, increasing (the first hosts listed). Default: 1, 2, 4, … and all.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub steps: Option<Vec<usize>>,
    /// The scaling efficiency (NOPM per host against the first step's, 1.0 linear) whose
    /// crossing is named.
    #[arg(long, value_name = "FRACTION", default_value = "0.8")]
    pub threshold: f64,
}

/// One job per host (see [`oio_fleet::tpcc::jobs`]); a ladder takes `--repeat` as its own.
pub(super) fn tpcc_jobs(a: &TpccRunArgs, ladder: bool) -> anyhow::Result<Vec<HostJob>> {
    let plan = a.tpcc.plan();
    oio_fleet::tpcc::check_step(&plan, ladder).map_err(anyhow::Error::msg)?;
    oio_fleet::tpcc::jobs(&plan, a.host.hosts()?, ladder).map_err(anyhow::Error::msg)
}

/// A baseline file read and checked against the plan.
type Baseline = (String, TpccResult);

/// Runs `oio fleet tpcc run`.
pub(super) fn run(a: TpccRunArgs) -> anyhow::Result<ExitCode> {
    let jobs = tpcc_jobs(&a, false)?;
    // Read the baseline and check its workers before anything runs, so a bad file costs no
    // run; its warehouses are checked against each host's database once they are prepared.
    let baseline = (a.baseline.as_ref())
        .map(|p| -> anyhow::Result<Baseline> {
            let name = p.display().to_string();
            let r: TpccResult = read(&name, &read_text(p)?, Kind::Tpcc)?;
            if let Some(j) = jobs.first() {
                oio_fleet::tpcc::check_baseline(&name, &r, &j.name, a.workers(), None)?;
            }
            Ok((name, r))
        })
        .transpose()?;
    check_destination(&a.tpcc.out, "--out DIR")?;
    let metrics = super::metrics(&a.metrics, a.metrics_linger)?;
    let stamp = oio_core::host::now_rfc3339();
    let dir = a.tpcc.out.join(
        result_file_name("fleet-tpcc", &stamp, &format!("n{}", a.workers()))
            .trim_end_matches(".json"),
    );
    let (run, doc, merged) = run_step(&a, &jobs, baseline.as_ref(), metrics.as_ref(), &dir)?;
    if a.tpcc.json {
        crate::output::print_json(&doc)?;
    } else if !style::quiet() {
        crate::output::fleet::print_tpcc(&doc);
    }
    for l in doc.envelope.warnings.iter().chain(&doc.lost) {
        style::print_warning(&oio_core::text::printable(l));
    }
    if let Some(f) = doc.scaling.as_ref().and_then(|s| s.flag.as_ref()) {
        style::print_warning(&oio_core::text::printable(f));
    }
    style::print_saved("result", &merged, a.tpcc.json);
    // Saved and printed first: the endpoint lingers (--metrics-linger) after everything else.
    drop(metrics);
    Ok(match (run.interrupted, doc.envelope.partial) {
        (true, _) => ExitCode::from(crate::interrupt::EXIT_INTERRUPTED),
        (_, true) => ExitCode::from(crate::EXIT_CHECK_FAILED),
        _ => ExitCode::SUCCESS,
    })
}

/// One fleet TPC-C run of `jobs` (a run, or a step of a ladder): started together, the live
/// table and `--metrics` fed, each host's result and the merged one written into `dir`.
pub(super) fn run_step(
    a: &TpccRunArgs,
    jobs: &[HostJob],
    baseline: Option<&Baseline>,
    metrics: Option<&crate::output::metrics::Metrics>,
    dir: &std::path::Path,
) -> anyhow::Result<(
    controller::FleetRun,
    oio_fleet::tpcc::FleetTpccResult,
    PathBuf,
)> {
    let cancel = oio_core::Cancel::from_flag(crate::interrupt::stop_flag());
    if !style::quiet() {
        let _ =
            writeln!(crate::output::terminal::stderr(),
            "oio fleet tpcc: {} workers on each of {} hosts ({}), ramp {:.1} s, measured {:.1} s",
            a.workers(),
            jobs.len(),
            jobs.iter()
                .map(|j| j.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            a.tpcc.ramp.as_secs_f64(),
            a.tpcc.time.as_secs_f64()
        );
    }
    let live = crate::output::fleet::FleetLive::new();
    let run = controller::run_gated(
        jobs,
        &a.host.options(),
        &cancel,
        &mut |p| {
            live.update(p);
            if let Some(m) = metrics {
                m.update(p);
            }
        },
        &mut |prepared| match baseline {
            Some((file, r)) => prepared.iter().try_for_each(|h| {
                let warehouses = h.tpcc.map(|t| t.1);
                oio_fleet::tpcc::check_baseline(file, r, h.host, a.workers(), warehouses)
                    .map_err(Into::into)
            }),
            None => Ok(()),
        },
    );
    live.finish();
    let run = run?;
    let (doc, merged) = save_tpcc(dir, &run, jobs, baseline, a.tpcc.label.as_deref())?;
    Ok((run, doc, merged))
}

/// Writes each host's own result into `dir`, then the merged one that names them.
fn save_tpcc(
    dir: &std::path::Path,
    run: &controller::FleetRun,
    jobs: &[HostJob],
    baseline: Option<&Baseline>,
    label: Option<&str>,
) -> anyhow::Result<(oio_fleet::tpcc::FleetTpccResult, PathBuf)> {
    let mut files = Vec::with_capacity(run.hosts.len());
    let mut ready = Vec::with_capacity(run.hosts.len());
    for h in &run.hosts {
        ready.push(h.tpcc_ready.clone().unwrap_or_default());
        files.push(match &h.tpcc_result {
            Some(r) => {
                let mut r = r.clone();
                r.envelope.command = std::env::args().collect();
                r.label = label.map(str::to_string);
                let p = write_json_atomic(dir, &format!("{}.json", h.name), &r)?;
                Some(p.display().to_string())
            }
            None => None,
        });
    }
    let Some(Work::Tpcc(plan)) = jobs.first().map(|j| &j.plan) else {
        bail!("no TPC-C plan to record");
    };
    let mut doc = oio_fleet::tpcc::document(run, plan, &ready, &files);
    doc.envelope.command = std::env::args().collect();
    doc.envelope.label = label.map(str::to_string);
    if let Some((file, r)) = baseline {
        // Checked before the start; should a host still differ, the run is kept and says so.
        if let Err(e) = oio_fleet::tpcc::set_scaling(&mut doc, file, r) {
            doc.notes.push(format!("no scaling efficiency: {e}"));
        }
    }
    let merged = write_json_atomic(dir, "merged.json", &doc)?;
    Ok((doc, merged))
}
