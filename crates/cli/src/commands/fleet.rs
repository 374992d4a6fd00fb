//! `oio fleet run|check`: one plan on many hosts over SSH (or any launcher giving a stdio pipe).

use crate::output::style;
use crate::results::{check_destination, result_file_name, write_json_atomic};
use anyhow::bail;
use oio_engine::{RunPlan, TargetBinding};
use oio_fleet::controller::{self, HostJob, Options};
use oio_fleet::inventory::{Inventory, Launcher};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

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
    Run(FleetArgs),
    /// Check every host: reachable, same oio, clock offset, targets (nothing is created).
    Check(FleetArgs),
}

/// Hosts, launcher, and `oio run`'s workload flags.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio fleet run --hosts db1,db2,db3 --rw randread --bs 8k --qd 32 --time 60s /data/oio.dat --size 10G
  oio fleet run --inventory lab.toml -p oltp-data --time 5m
  oio fleet run --hosts pod-0,pod-1 --launcher 'kubectl exec -i {host} -- oio agent --stdio' ...
  oio fleet check --hosts db1,db2 /data/oio.dat --size 10G")]
pub struct FleetArgs {
    /// Hosts, comma-separated, as the launcher takes them (ssh: names from ~/.ssh/config).
    #[arg(
        long,
        value_name = "HOSTS",
        required_unless_present = "inventory",
        conflicts_with = "inventory"
    )]
    pub hosts: Option<String>,

    /// Inventory file (TOML): hosts, per-host targets and roles, launchers.
    #[arg(long, value_name = "FILE")]
    pub inventory: Option<PathBuf>,

    /// How to start an agent on a host; {host} is replaced. Default: ssh {host} oio agent --stdio.
    #[arg(long, value_name = "TEMPLATE")]
    pub launcher: Option<String>,

    /// Time for every host to connect and answer.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::cli::duration_arg)]
    pub connect_timeout: Duration,

    /// The workload, as `oio run` takes it (targets are paths on each host).
    #[command(flatten)]
    pub run: crate::args::RunFlags,

    /// Directory for the per-host and merged result files.
    #[arg(long, value_name = "DIR", default_value = "oio-results")]
    pub out: PathBuf,

    /// Print the merged result as JSON on stdout (and nothing else there).
    #[arg(long)]
    pub json: bool,
}

/// Runs `oio fleet`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Sub::Run(a) => fleet_run(a),
        Sub::Check(a) => fleet_check(a),
    }
}

fn jobs(a: &FleetArgs) -> anyhow::Result<(RunPlan, Vec<HostJob>)> {
    let inv = match (&a.hosts, &a.inventory) {
        (Some(list), _) => Inventory::from_list(list, a.launcher.as_deref())?,
        (None, Some(path)) => {
            let mut inv = Inventory::from_file(path)?;
            if let Some(l) = &a.launcher {
                inv.launcher = Some(l.clone());
            }
            inv
        }
        (None, None) => bail!("give --hosts a,b,c or --inventory FILE"),
    };
    let plan = a.run.config()?.engine_plan();
    let mut jobs = Vec::with_capacity(inv.hosts.len());
    for h in &inv.hosts {
        let launcher = Launcher::parse(inv.launcher_of(h)).map_err(anyhow::Error::msg)?;
        let mut p = plan.clone();
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
        jobs.push(HostJob {
            name: h.name.clone(),
            argv: launcher.argv(&h.name),
            plan: p,
        });
    }
    Ok((plan, jobs))
}

fn options(a: &FleetArgs) -> Options {
    Options {
        oio_version: crate::cli::VERSION.to_string(),
        connect_timeout: a.connect_timeout,
        min_lead: Duration::from_millis(250),
    }
}

fn fleet_run(a: FleetArgs) -> anyhow::Result<ExitCode> {
    let (plan, jobs) = jobs(&a)?;
    check_destination(&a.out, "--out DIR")?;
    let cancel = oio_core::Cancel::from_flag(crate::interrupt::stop_flag());
    if !style::quiet() {
        eprintln!(
            "oio fleet: {} on {} hosts ({})",
            plan.workload.name,
            jobs.len(),
            jobs.iter()
                .map(|j| j.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let run = controller::run(&jobs, &options(&a), &cancel)?;

    // Each host's own result first, then the merged one that names them.
    let stamp = oio_core::host::now_rfc3339();
    let dir = a
        .out
        .join(result_file_name("fleet", &stamp, &plan.workload.name).trim_end_matches(".json"));
    let mut files = Vec::with_capacity(run.hosts.len());
    for h in &run.hosts {
        files.push(match &h.result {
            Some(r) => {
                let mut r = r.clone();
                r.envelope.command = std::env::args().collect();
                let p = write_json_atomic(&dir, &format!("{}.json", h.name), &r)?;
                Some(p.display().to_string())
            }
            None => None,
        });
    }
    let mut doc = oio_fleet::merge::document(&run, &plan, &files);
    doc.envelope.command = std::env::args().collect();
    let merged = write_json_atomic(&dir, "merged.json", &doc)?;

    if a.json {
        crate::output::print_json(&doc)?;
    } else if !style::quiet() {
        crate::output::fleet::print_table(&doc);
    }
    for l in &doc.lost {
        style::print_warning(l);
    }
    style::print_notice(&format!("result: {}", merged.display()));
    Ok(if run.interrupted {
        ExitCode::from(crate::interrupt::EXIT_INTERRUPTED)
    } else if doc.envelope.partial {
        ExitCode::from(crate::EXIT_CHECK_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

fn fleet_check(a: FleetArgs) -> anyhow::Result<ExitCode> {
    let (_, jobs) = jobs(&a)?;
    let cancel = oio_core::Cancel::from_flag(crate::interrupt::stop_flag());
    let out = controller::check(&jobs, &options(&a), &cancel);
    if a.json {
        crate::output::print_json(&out)?;
    } else {
        crate::output::fleet::print_check(&out);
    }
    let bad = out.iter().filter(|h| !h.ok()).count();
    if bad > 0 {
        style::print_warning(&format!("{bad} of {} hosts failed the check", out.len()));
        return Ok(ExitCode::from(crate::EXIT_CHECK_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}
