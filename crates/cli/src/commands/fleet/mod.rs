//! `oio fleet run|check|sweep|scale|tpcc run|sql run|install|fio`: one plan on many hosts over SSH (or any launcher giving a
//! stdio pipe). Each subcommand has its own file; what they share (hosts, launchers) is here.

mod fio;
mod install;
mod run;
mod scale;
mod sql;
mod sweep;
mod tpcc;

use anyhow::{bail, Context as _};
use oio_engine::{RunPlan, TargetBinding};
use oio_fleet::controller::{FleetRun, HostJob, Options, Work};
use oio_fleet::inventory::{HostSpec, Inventory, Launcher};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

pub use fio::FioArgs;
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

/// Where the hosts come from, as every fleet command takes it.
#[derive(Debug, clap::Args)]
pub struct HostArgs {
    /// Hosts, comma-separated, as the launcher takes them (ssh: names from ~/.ssh/config).
    #[arg(
        long,
        value_name = "HOSTS",
        required_unless_present = "inventory",
        conflicts_with = "inventory"
    )]
    pub hosts: Option<String>,

    /// Inventory file (TOML): hosts, per-host targets, roles, databases, launchers.
    #[arg(long, value_name = "FILE")]
    pub inventory: Option<PathBuf>,

    /// How to start an agent on a host; {host} is replaced. Default: ssh {host} oio agent --stdio.
    #[arg(long, value_name = "TEMPLATE")]
    pub launcher: Option<String>,

    /// Time for every host to connect and answer.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::values::duration_arg)]
    pub connect_timeout: Duration,

    /// A host that sends nothing for this long (its agent stopped, its link dead), or whose
    /// prepare or check does not advance for this long (its storage hangs), is stalled: named
    /// with the phase, and the run stops.
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = crate::values::duration_arg)]
    pub stall_timeout: Duration,
}

impl HostArgs {
    /// The hosts, each with its launcher's command line; every one is talked to at once.
    fn hosts(&self) -> anyhow::Result<Vec<(HostSpec, Vec<String>)>> {
        self.hosts_at_once(usize::MAX)
    }

    /// The hosts, at most `most` of them talked to at once: the open-file limit is raised
    /// for them, or the command refused before anything starts.
    fn hosts_at_once(&self, most: usize) -> anyhow::Result<Vec<(HostSpec, Vec<String>)>> {
        let inv = self.inventory()?;
        let mut out = Vec::with_capacity(inv.hosts.len());
        for h in &inv.hosts {
            let launcher = Launcher::parse(inv.launcher_of(h)).map_err(anyhow::Error::msg)?;
            out.push((h.clone(), launcher.argv(&h.name)));
        }
        oio_fleet::limits::ensure(out.len().min(most))?;
        Ok(out)
    }

    /// The inventory: `--inventory`'s, or one made of `--hosts`.
    fn inventory(&self) -> anyhow::Result<Inventory> {
        let inv = match (&self.hosts, &self.inventory) {
            (Some(list), _) => Inventory::from_list(list, self.launcher.as_deref())?,
            (None, Some(path)) => {
                let mut inv = Inventory::from_file(path)?;
                if let Some(l) = &self.launcher {
                    inv.launcher = Some(l.clone());
                }
                inv
            }
            (None, None) => bail!("give --hosts a,b,c or --inventory FILE"),
        };
        Ok(inv)
    }

    fn options(&self) -> Options {
        Options {
            oio_version: crate::values::VERSION.to_string(),
            connect_timeout: self.connect_timeout,
            min_lead: Duration::from_millis(250),
            stall_timeout: self.stall_timeout,
        }
    }
}

/// One job per host: `plan` (or its workload group's, made from `flags` and the group's
/// workload) with the host's own target bindings when its inventory has some; `{host}` in
/// target paths is the host's name.
fn io_jobs(
    host: &HostArgs,
    plan: &RunPlan,
    flags: Option<&crate::args::RunFlags>,
) -> anyhow::Result<Vec<HostJob>> {
    let inv = host.inventory()?;
    let hosts = host.hosts()?;
    if flags.is_none() && inv.has_groups() {
        bail!("this command runs one workload on every host: remove the inventory's group, workload and profile keys");
    }
    let mut plans: std::collections::BTreeMap<String, RunPlan> = Default::default();
    let mut jobs = Vec::with_capacity(hosts.len());
    for (h, argv) in hosts {
        let (group, spec) = inv.group_of(&h);
        let mut p = match flags {
            Some(f) if !spec.is_empty() => match plans.get(&group) {
                Some(p) => p.clone(),
                None => {
                    let p = group_flags(f, &spec)
                        .and_then(|f| Ok(f.config()?.plan))
                        .with_context(|| format!("workload group '{group}' (host {})", h.name))?;
                    plans.insert(group.clone(), p.clone());
                    p
                }
            },
            _ => plan.clone(),
        };
        if !h.targets.is_empty() || !h.roles.is_empty() {
            p.bindings.clear();
            if !h.targets.is_empty() {
                p.bindings.push(TargetBinding {
                    role: String::new(),
                    paths: h.targets.clone(),
                });
            }
            for (role, paths) in &h.roles {
                p.bindings.push(TargetBinding {
                    role: role.clone(),
                    paths: paths.clone(),
                });
            }
        }
        let on_host = |path: &mut PathBuf| {
            let s = path.to_string_lossy();
            if s.contains("{host}") {
                *path = PathBuf::from(s.replace("{host}", &h.name));
            }
        };
        for b in &mut p.bindings {
            b.paths.iter_mut().for_each(on_host);
        }
        p.lat_log.iter_mut().for_each(on_host);
        p.hdr_log.iter_mut().for_each(on_host);
        jobs.push(HostJob {
            name: h.name.clone(),
            argv,
            plan: Work::Io(p),
            group: if inv.has_groups() {
                group
            } else {
                String::new()
            },
        });
    }
    Ok(jobs)
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

/// The command line's flags changed by a workload group: a group with its own workload (file,
/// profile, pattern) takes none of the command line's workload flags; one with flags only
/// changes the command line's workload. Targets and run settings stay the command line's.
fn group_flags(
    base: &crate::args::RunFlags,
    spec: &oio_fleet::inventory::WorkloadSpec,
) -> anyhow::Result<crate::args::RunFlags> {
    let g = crate::args::parse_run_words(spec.words())?;
    let mut f = base.clone();
    if spec.own_source() {
        f.source = g.source;
        f.shape = g.shape;
        f.workload = g.workload;
    } else {
        f.shape = crate::args::ShapeArgs {
            bs: g.shape.bs.or(f.shape.bs),
            read_pct: g.shape.read_pct.or(f.shape.read_pct),
            qd: g.shape.qd.or(f.shape.qd),
        };
        f.workload = g.workload.or(f.workload);
    }
    Ok(f)
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
