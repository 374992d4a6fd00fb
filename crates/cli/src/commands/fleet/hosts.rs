//! The hosts of every fleet command (`--hosts`, `--inventory`, `--launcher`, the timeouts), and
//! the I/O jobs of the workload commands (run, check, sweep, scale): one per host, with its
//! workload group's plan and its own targets.

use anyhow::{bail, Context as _};
use oio_engine::RunPlan;
use oio_fleet::controller::{HostJob, Options, Work};
use oio_fleet::inventory::{HostSpec, Inventory, Launcher};
use std::path::PathBuf;
use std::time::Duration;

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
    pub(super) fn hosts(&self) -> anyhow::Result<Vec<(HostSpec, Vec<String>)>> {
        self.hosts_at_once(usize::MAX)
    }

    /// The hosts, at most `most` of them talked to at once: the open-file limit is raised
    /// for them, or the command refused before anything starts.
    pub(super) fn hosts_at_once(
        &self,
        most: usize,
    ) -> anyhow::Result<Vec<(HostSpec, Vec<String>)>> {
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
    pub(super) fn inventory(&self) -> anyhow::Result<Inventory> {
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
        inv.check_flags(&crate::args::workload_flag_names())?;
        Ok(inv)
    }

    pub(super) fn options(&self) -> Options {
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
pub(super) fn io_jobs(
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
        h.bind(&mut p);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{parse_run_words, workload_flag_names};

    /// A group takes `oio run`'s workload flags by construction (issue 36): flags the
    /// inventory once had no key for reach the group's plan; a run setting is refused.
    #[test]
    fn a_group_takes_every_workload_flag_of_oio_run() {
        let names = workload_flag_names();
        for once_missing in [
            "fsync",
            "trim-pct",
            "compress-pct",
            "stripe",
            "burst",
            "arrival",
        ] {
            assert!(names.iter().any(|n| n == once_missing), "{names:?}");
        }
        assert!(
            !names.iter().any(|n| n == "time" || n == "engine"),
            "{names:?}"
        );
        let text = "[group.g]\nfsync = 8\ntrim_pct = 10\ncompress-pct = 50\nqd = 4\n\
                    [[host]]\nname = \"a\"\ngroup = \"g\"\n";
        let inv = Inventory::parse(text, "i.toml").unwrap();
        inv.check_flags(&names).unwrap();
        let base = parse_run_words(vec!["--rw".into(), "randwrite".into()]).unwrap();
        let (_, spec) = inv.group_of(&inv.hosts[0]);
        let f = group_flags(&base, &spec).unwrap();
        assert_eq!(f.workload.fsync, Some(8));
        assert_eq!(f.workload.trim_pct, Some(10.0));
        assert_eq!(f.workload.compress_pct, Some(50.0));
        assert_eq!(f.shape.qd, Some(4));
        let inv = Inventory::parse(
            "[group.g]\ntime = \"5s\"\n[[host]]\nname = \"a\"\ngroup = \"g\"\n",
            "i.toml",
        )
        .unwrap();
        let e = inv.check_flags(&names).unwrap_err().to_string();
        assert!(
            e.starts_with("i.toml:2:8: group 'g': 'time' is not a workload flag"),
            "{e}"
        );
    }
}
