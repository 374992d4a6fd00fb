//! `oio fleet run|check|sweep|scale|tpcc run|sql run|install|fio`: one plan on many hosts over
//! SSH (or any launcher giving a stdio pipe). Each subcommand has its own file; the hosts and
//! their jobs are in `hosts`; the `--metrics` endpoint and saving an I/O run's results are here.

mod fio;
mod hosts;
mod install;
mod run;
mod scale;
mod sql;
mod sweep;
mod tpcc;

use anyhow::Context as _;
use oio_engine::RunPlan;
use oio_fleet::controller::FleetRun;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

pub use fio::FioArgs;
use hosts::io_jobs;
pub use hosts::HostArgs;
pub use install::InstallArgs;
pub use run::{FleetArgs, FleetRunArgs};
pub use scale::ScaleArgs;
pub use sql::{SqlAction, SqlArgs};
pub use sweep::SweepArgs;
pub use tpcc::{TpccAction, TpccArgs};

/// Arguments of `oio fleet`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub command: Sub,
}

/// `oio fleet` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Sub {
    /// Run one workload on every host, started together; per-host and merged results.
    Run(FleetRunArgs),
    /// Check every host: reachable, same oio, clock offset, targets (nothing is created).
    Check(FleetArgs),
    /// A ladder of queue depths, each a fleet run; a sweep of the merged points with its knee.
    Sweep(SweepArgs),
    /// A ladder of hosts (1, 2, 4, … N), each a fleet run; scaling efficiency against the
    /// first step and where it falls below a threshold.
    Scale(ScaleArgs),
    /// The TPC-C-like benchmark on every host's database at once; NOPM summed.
    Tpcc(TpccArgs),
    /// Your own SQL transactions (`oio sql run`'s scripts) on every host's database at once;
    /// committed transactions summed, latency histograms merged.
    Sql(SqlArgs),
    /// Drive fio's own client/server mode (hosts running `fio --server`); import its results.
    Fio(FioArgs),
    /// Copy this oio to hosts that lack it or run another version; check each by a hello.
    Install(InstallArgs),
}

/// Runs `oio fleet`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Sub::Run(a) => run::fleet_run(a),
        Sub::Check(a) => run::fleet_check(a),
        Sub::Sweep(a) => sweep::run(a),
        Sub::Scale(a) => scale::run(a),
        Sub::Tpcc(a) => match a.action {
            TpccAction::Run(a) => tpcc::run(a),
            TpccAction::Scale(a) => scale::tpcc(a),
        },
        Sub::Sql(a) => sql::run(a),
        Sub::Install(a) => install::run(a),
        Sub::Fio(a) => fio::run(a),
    }
}

/// The `--metrics` endpoint, when asked for.
fn metrics(
    addr: &Option<String>,
    linger: Duration,
) -> anyhow::Result<Option<crate::output::metrics::Metrics>> {
    let Some(addr) = addr else { return Ok(None) };
    let m = crate::output::metrics::Metrics::serve(addr, linger)?;
    // Even with -q: with port 0 this line is the only way to learn the port bound.
    let _ = writeln!(
        crate::output::terminal::stderr(),
        "oio fleet: live figures at http://{}/metrics",
        m.addr
    );
    Ok(Some(m))
}

/// A host's `--hdr-log`/`--lat-log` files into `DIR/HOST.logs/`; their paths.
fn save_logs(
    dir: &std::path::Path,
    h: &oio_fleet::controller::HostOutcome,
) -> anyhow::Result<Vec<String>> {
    if h.logs.is_empty() {
        return Ok(Vec::new());
    }
    let d = dir.join(format!("{}.logs", h.name));
    std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
    let mut out = Vec::new();
    for l in &h.logs {
        // Names were checked on arrival: a plain file name, each once.
        let bytes = l
            .bytes()
            .map_err(|e| anyhow::anyhow!("host {}: {e}", h.name))?;
        let p = d.join(&l.name);
        std::fs::write(&p, bytes).with_context(|| format!("writing {}", p.display()))?;
        out.push(p.display().to_string());
    }
    Ok(out)
}

/// Writes each host's own result into `dir`, then the merged one that names them.
fn save_io(
    dir: &std::path::Path,
    run: &FleetRun,
    plan: &RunPlan,
    label: Option<&str>,
) -> anyhow::Result<(oio_fleet::merge::FleetResult, PathBuf)> {
    use crate::results::write_json_atomic;
    let mut files = Vec::with_capacity(run.hosts.len());
    for h in &run.hosts {
        files.push(match &h.result {
            Some(r) => {
                let mut r = r.clone();
                r.envelope.command = std::env::args().collect();
                r.envelope.label = label.map(str::to_string);
                let p = write_json_atomic(dir, &format!("{}.json", h.name), &r)?;
                Some(p.display().to_string())
            }
            None => None,
        });
    }
    let mut doc = oio_fleet::merge::document(run, plan, &files);
    for (h, row) in run.hosts.iter().zip(&mut doc.hosts) {
        row.logs = save_logs(dir, h)?;
    }
    doc.envelope.command = std::env::args().collect();
    doc.envelope.label = label.map(str::to_string);
    let merged = write_json_atomic(dir, "merged.json", &doc)?;
    Ok((doc, merged))
}
